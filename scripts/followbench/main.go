// Command followbench measures following a live Unleash (--follow)
// against an Unleash database (the fixture's schema and rows, restored by
// scripts/bench-follow.sh), into the store of -target: memory (the
// default) or a database URL for bunstore (sqlite:PATH, postgres://...,
// mysql://...; it must be empty, and each run needs a new one):
//
//   - latency: events committed at -rate per second by 4 writers (each in
//     its own transaction, so ids commit out of order) until searchable in
//     the copy, for -duration: p50, p99, max;
//   - idle: the follower caught up, nothing written, for -idle: the CPU
//     time of its backend process on the source (/proc, so the source must
//     run on this machine), as a share of one core, and its own;
//   - token: -tokens API tokens created and deleted in Unleash (with their
//     events), each deletion timed until the token no longer
//     authenticates at a service behind the server's token cache;
//   - catchup: the follower stopped, -backlog events written, the follower
//     started again: events/s until caught up, and the peak RSS of this
//     process, with the copy in the target, or only the follower's work
//     (-target discard: a store that keeps the position and drops the
//     rows, for the follower's own memory); -cpuprofile FILE profiles this
//     process (the follower and the store's client) while it catches up.
//
// Usage:
//
//	followbench -db postgres://.../unleash_bench_follow -run latency,idle,token
//	followbench -db ... -run catchup -target discard -backlog 1000000
//	followbench -db ... -run catchup -target postgres://.../copy -backlog 1000000
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
)

func main() {
	db := flag.String("db", "", "URL of the Unleash database (required)")
	runs := flag.String("run", "latency,idle,token", "measurements, comma-separated: latency, idle, token, catchup")
	rate := flag.Int("rate", 100, "events per second of the latency run")
	duration := flag.Duration("duration", 60*time.Second, "length of the latency run")
	idle := flag.Duration("idle", 60*time.Second, "length of the idle run")
	tokens := flag.Int("tokens", 50, "tokens of the token run")
	backlog := flag.Int("backlog", 1_000_000, "events of the catchup run")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process over the timed catch-up to this file (catchup run)")
	target := flag.String("target", "memory", "store of the copy: memory, a database URL (sqlite:PATH, postgres://..., mysql://...; empty, one per run), or for catchup discard")
	flag.Parse()
	if *db == "" {
		fmt.Fprintln(os.Stderr, "followbench: -db is required")
		os.Exit(2)
	}
	ctx := context.Background()
	for _, r := range strings.Split(*runs, ",") {
		var err error
		switch strings.TrimSpace(r) {
		case "latency":
			err = latency(ctx, *db, *target, *rate, *duration)
		case "idle":
			err = idleCost(ctx, *db, *target, *idle)
		case "token":
			err = tokenBound(ctx, *db, *target, *tokens)
		case "catchup":
			err = catchUp(ctx, *db, *backlog, *target, *cpuProfile)
		default:
			err = fmt.Errorf("unknown run %q", r)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "followbench:", err)
			os.Exit(1)
		}
	}
}

// copyStore is a store the copy goes into.
type copyStore interface {
	unleashimport.FollowStore
	flagadmin.VersionedStore
}

// openTarget opens the store of -target: memory or a bunstore database,
// with opts.
func openTarget(ctx context.Context, target string, opts ...bunstore.Option) (copyStore, func(), error) {
	if target == "memory" {
		return memstore.New(), func() {}, nil
	}
	s, err := bunstore.Open(ctx, target, opts...)
	if err != nil {
		return nil, nil, err
	}
	return s, func() { s.Close() }, nil
}

// follower runs a follower of db into store with the production defaults
// until stop is called.
type follower struct {
	*unleashimport.Follower
	stop func()
}

func startFollower(db string, store unleashimport.FollowStore) (*follower, error) {
	f := unleashimport.NewFollower(db, store, unleashimport.FollowOptions{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if _, err := f.Check(context.Background()); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = f.Run(ctx) }()
	return &follower{Follower: f, stop: func() { cancel(); <-done }}, nil
}

// caughtUp waits until the follower's position reaches id.
func (f *follower) caughtUp(id int64, limit time.Duration) error {
	for start := time.Now(); f.Status().Position < id; time.Sleep(2 * time.Millisecond) {
		if time.Since(start) > limit {
			return fmt.Errorf("not caught up with %d within %s: %+v", id, limit, f.Status())
		}
	}
	return nil
}

func newest(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var id int64
	err := conn.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM events`).Scan(&id)
	return id, err
}

// benchRun is a follower of the source db into the store of -target, with
// a connection of its own to the source for the benchmark's writes.
type benchRun struct {
	store copyStore
	f     *follower
	conn  *pgx.Conn
	close func()
}

// start opens the target, starts following db into it and connects to db.
func start(ctx context.Context, db, target string) (*benchRun, error) {
	store, closeStore, err := openTarget(ctx, target)
	if err != nil {
		return nil, err
	}
	f, err := startFollower(db, store)
	if err != nil {
		closeStore()
		return nil, err
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		f.stop()
		closeStore()
		return nil, err
	}
	return &benchRun{store: store, f: f, conn: conn, close: func() {
		conn.Close(context.Background())
		f.stop()
		closeStore()
	}}, nil
}

// caughtUpNow waits until the copy holds the source's newest event, and
// returns its id.
func (r *benchRun) caughtUpNow(ctx context.Context) (int64, error) {
	last, err := newest(ctx, r.conn)
	if err != nil {
		return 0, err
	}
	return last, r.f.caughtUp(last, 2*time.Minute)
}

const insertEvent = `INSERT INTO events (type, created_by, created_by_user_id, data, tags, project, feature_name, environment)
	VALUES ('feature-strategy-update', 'admin', -42, $1::json, '[]', 'default', 'dark-mode', 'production') RETURNING id`

// latency writes events at rate per second from 4 connections for d and
// reports how long each took from its commit to the copy.
func latency(ctx context.Context, db, target string, rate int, d time.Duration) error {
	r, err := start(ctx, db, target)
	if err != nil {
		return err
	}
	defer r.close()
	store, f, conn := r.store, r.f, r.conn
	last, err := r.caughtUpNow(ctx)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	committed := map[int64]time.Time{}
	arrived := map[int64]time.Time{}
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() { // the copy, read every 2 ms
		defer close(watched)
		after := last
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(2 * time.Millisecond):
			}
			now := time.Now()
			_ = store.ExportEvents(ctx, flagadmin.EventQuery{}, after, func(e flagadmin.Event) error {
				mu.Lock()
				arrived[e.ID] = now
				mu.Unlock()
				after = e.ID
				return nil
			})
		}
	}()
	var wg sync.WaitGroup
	writers := 4
	interval := time.Duration(writers) * time.Second / time.Duration(rate)
	end := time.Now().Add(d)
	var failed atomic.Value
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := pgx.Connect(ctx, db)
			if err != nil {
				failed.Store(err)
				return
			}
			defer c.Close(ctx)
			time.Sleep(time.Duration(w) * interval / time.Duration(writers))
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for time.Now().Before(end) {
				<-tick.C
				tx, err := c.Begin(ctx)
				if err != nil {
					failed.Store(err)
					return
				}
				var id int64
				if err := tx.QueryRow(ctx, insertEvent, fmt.Sprintf(`{"w":%d}`, w)).Scan(&id); err != nil {
					failed.Store(err)
					return
				}
				time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond) // other work in the transaction
				if err := tx.Commit(ctx); err != nil {
					failed.Store(err)
					return
				}
				mu.Lock()
				committed[id] = time.Now()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	final, err := newest(ctx, conn)
	if err != nil {
		return err
	}
	if err := f.caughtUp(final, time.Minute); err != nil {
		return err
	}
	time.Sleep(10 * time.Millisecond)
	close(stopWatch)
	<-watched
	var lat []time.Duration
	for id, at := range committed {
		got, ok := arrived[id]
		if !ok {
			return fmt.Errorf("event %d committed, not in the copy", id)
		}
		lat = append(lat, max(0, got.Sub(at)))
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	fmt.Printf("latency: %d events at %d/s from %d writers over %s into %s; commit to copy p50 %s, p90 %s, p99 %s, max %s\n",
		len(lat), rate, writers, d, targetName(target), q(0.50).Round(time.Millisecond), q(0.90).Round(time.Millisecond), q(0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	return nil
}

// idleCost measures the CPU of the follower's backend on the source over d
// while nothing is written.
func idleCost(ctx context.Context, db, target string, d time.Duration) error {
	r, err := start(ctx, db, target)
	if err != nil {
		return err
	}
	defer r.close()
	conn := r.conn
	if _, err := r.caughtUpNow(ctx); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'flagadmin' AND pid <> pg_backend_pid()`).Scan(&pid); err != nil {
		return fmt.Errorf("the follower's backend: %w", err)
	}
	conn.Close(ctx) // measure the follower alone
	before, err := ticks(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return fmt.Errorf("the backend's CPU (the source must run on this machine): %w", err)
	}
	self0, _ := ticks("/proc/self/stat")
	time.Sleep(d)
	after, err := ticks(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return err
	}
	self1, _ := ticks("/proc/self/stat")
	const hz = 100 // USER_HZ
	share := func(t int64) float64 { return float64(t) / hz / d.Seconds() * 100 }
	fmt.Printf("idle: over %s the follower's backend on the source used %.2f%% of one core (%d ticks); this process (follower and bench) %.2f%%\n",
		d, share(after-before), after-before, share(self1-self0))
	return nil
}

// ticks reads utime+stime of a /proc/PID/stat file.
func ticks(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, err1 := strconv.ParseInt(fields[11], 10, 64)
	st, err2 := strconv.ParseInt(fields[12], 10, 64)
	return u + st, errors.Join(err1, err2)
}

// tokenBound creates and deletes tokens in Unleash and times each
// deletion until the token is refused by a service behind the server's
// token cache.
func tokenBound(ctx context.Context, db, target string, n int) error {
	r, err := start(ctx, db, target)
	if err != nil {
		return err
	}
	defer r.close()
	conn := r.conn
	svc := flagadmin.NewService(storecache.New(r.store, storecache.Options{TokenTTL: storecache.DefaultTokenTTL, ResultCacheSize: storecache.DefaultResultCacheSize}))
	inTx := func(stmts ...string) error {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return tx.Commit(ctx)
	}
	var took []time.Duration
	for i := range n {
		secret := fmt.Sprintf("*:*.followbench-%d-%d", time.Now().UnixNano(), i)
		if err := inTx(`INSERT INTO api_tokens (secret, username, token_name, type, environment) VALUES ('`+secret+`', 'bench', 'bench', 'admin', NULL)`,
			`INSERT INTO events (type, created_by, created_by_user_id, data) VALUES ('api-token-created', 'admin', -42, '{}')`); err != nil {
			return err
		}
		for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
			if _, err := svc.Authenticate(ctx, secret); err == nil {
				break
			}
			if time.Since(start) > 30*time.Second {
				return fmt.Errorf("token %d never authenticated", i)
			}
		}
		time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond)
		if err := inTx(`DELETE FROM api_tokens WHERE secret = '`+secret+`'`,
			`INSERT INTO events (type, created_by, created_by_user_id, data) VALUES ('api-token-deleted', 'admin', -42, '{}')`); err != nil {
			return err
		}
		start := time.Now()
		for {
			if _, err := svc.Authenticate(ctx, secret); errors.Is(err, flagadmin.ErrAuthenticationRequired) {
				break
			}
			if time.Since(start) > 30*time.Second {
				return fmt.Errorf("deleted token %d still authenticates after 30 s", i)
			}
			time.Sleep(2 * time.Millisecond)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	q := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	fmt.Printf("token: %d deletions in Unleash, refused at flagadmin over %s (token cache %s) after p50 %s, p99 %s, max %s\n",
		n, targetName(target), storecache.DefaultTokenTTL, q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	return nil
}

// catchUp follows until caught up, stops, writes backlog events, and
// times the follower that starts again until it has them all, profiling
// this process's CPU meanwhile into the file cpuProfile unless it is "".
func catchUp(ctx context.Context, db string, backlog int, target, cpuProfile string) error {
	var store unleashimport.FollowStore = &discard{}
	indexed := make(chan struct{}, 1) // the store's full-text backlog is filled
	if target != "discard" {
		log := slog.New(backlogLog{slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}), indexed})
		s, closeStore, err := openTarget(ctx, target, bunstore.WithLogger(log))
		if err != nil {
			return err
		}
		defer closeStore()
		store = s
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	f, err := startFollower(db, store)
	if err != nil {
		return err
	}
	last, err := newest(ctx, conn)
	if err != nil {
		return err
	}
	if err := f.caughtUp(last, 2*time.Minute); err != nil {
		return err
	}
	f.stop()
	start := time.Now()
	// Written in one statement, without the events table's trigger (which
	// counts changes per environment in one row: a bulk write's bottleneck,
	// not Unleash's, which writes events a few at a time).
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO events (type, created_by, created_by_user_id, data, tags, project, feature_name, environment)
		SELECT 'feature-strategy-update', 'admin', -42,
			json_build_object('id', g, 'name', 'flexibleRollout', 'parameters', json_build_object('rollout', '50', 'stickiness', 'default', 'groupId', 'dark-mode')),
			'[{"type":"simple","value":"web"}]', 'default', 'dark-mode', 'production'
		FROM generate_series(1, $1) g`, backlog); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE events`); err != nil {
		return err
	}
	// The backlog's writes are flushed now, not by a checkpoint during the
	// timed copy (a superuser's right; without it the copy may pay for
	// them).
	_, _ = conn.Exec(ctx, `CHECKPOINT`)
	final, err := newest(ctx, conn)
	if err != nil {
		return err
	}
	fmt.Printf("catchup: %d events written to the source in %s\n", backlog, time.Since(start).Round(time.Millisecond))
	before := peakRSS()
	stopProfile, err := startCPUProfile(cpuProfile)
	if err != nil {
		return err
	}
	select {
	case <-indexed: // a backlog of the first copy's
	default:
	}
	start = time.Now()
	f, err = startFollower(db, store)
	if err != nil {
		return err
	}
	defer f.stop()
	if err := f.caughtUp(final, 30*time.Minute); err != nil {
		return err
	}
	took := time.Since(start)
	if err := stopProfile(); err != nil {
		return err
	}
	fmt.Printf("catchup: %d events caught up into %s in %s: %.0f events/s; peak RSS of this process %d MiB (%d MiB before)\n",
		final-last, targetName(target), took.Round(time.Millisecond), float64(final-last)/took.Seconds(), peakRSS()>>20, before>>20)
	if !strings.HasPrefix(target, "postgres") && !strings.HasPrefix(target, "sqlite:") {
		return nil // no full-text backlog
	}
	select {
	case <-indexed:
		fmt.Printf("catchup: the copy's full-text index held every event %s after the catch-up began\n", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Minute):
		fmt.Printf("catchup: the copy's full-text index did not hold every event 10 minutes after the catch-up began\n")
	}
	return nil
}

// backlogLog is the copy's logger in the catch-up run: warnings and
// errors to its Handler, and a signal on indexed each time the store says
// its full-text index holds the texts of every event (its backlog done).
type backlogLog struct {
	slog.Handler
	indexed chan struct{}
}

func (h backlogLog) Enabled(context.Context, slog.Level) bool { return true }

func (h backlogLog) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "the full-text index holds the texts of every event") {
		select {
		case h.indexed <- struct{}{}:
		default:
		}
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h backlogLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return backlogLog{h.Handler.WithAttrs(attrs), h.indexed}
}

func (h backlogLog) WithGroup(name string) slog.Handler {
	return backlogLog{h.Handler.WithGroup(name), h.indexed}
}

// startCPUProfile starts a CPU profile written to path and returns the
// function that stops it and closes the file; with path "" it does
// nothing.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// targetName is how the results name the target: its kind of database.
func targetName(target string) string {
	name, _, _ := strings.Cut(target, ":")
	return name
}

// peakRSS is this process's peak resident set (VmHWM), in bytes.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// discard is a follow store that keeps its follow state, its lease and
// the ids of its projects, and drops the other rows and the events it is
// given: the follower's own cost.
type discard struct {
	mu       sync.Mutex
	st       follow.State
	projects map[string]bool
}

func (d *discard) Project(_ context.Context, id string) (flagadmin.Project, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.projects[id] {
		return flagadmin.Project{}, flagadmin.ErrNotFound
	}
	return flagadmin.Project{ID: id}, nil
}

// keepProjects records the projects of a batch.
func (d *discard) keepProjects(full bool, upsert []flagadmin.Project, remove []string) {
	if d.projects == nil || full {
		d.projects = map[string]bool{}
	}
	for _, p := range upsert {
		d.projects[p.ID] = true
	}
	for _, id := range remove {
		delete(d.projects, id)
	}
}

func (d *discard) Contents(context.Context) (map[string]int64, error) { return map[string]int64{}, nil }

func (d *discard) FollowState(context.Context) (follow.State, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st, nil
}

func (d *discard) AcquireFollowLease(_ context.Context, holder string, now, until time.Time) (follow.State, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	held := d.st.Lease.Acquire(holder, now, until)
	return d.st, held, nil
}

func (d *discard) ReleaseFollowLease(_ context.Context, holder string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.Lease.Release(holder)
	return nil
}

func (d *discard) LoadFollow(_ context.Context, _ string, _ time.Time, st follow.State, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error {
	if err := events(func([]flagadmin.Event) error { return nil }); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keepProjects(true, b.Projects, nil)
	d.st.Source, d.st.Position, d.st.Holes, d.st.SyncedAt = st.Source, st.Position, st.Holes, st.SyncedAt
	return nil
}

func (d *discard) ApplyFollow(_ context.Context, _ string, _ time.Time, b *follow.Batch) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keepProjects(b.Full, b.Projects, b.DeleteProjects)
	d.st.Position, d.st.Holes = b.Position, b.Holes
	if !b.SyncedAt.IsZero() {
		d.st.SyncedAt = b.SyncedAt
	}
	return nil
}
