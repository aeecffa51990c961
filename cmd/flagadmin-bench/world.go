package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// Sizes of the bulk load: the generator hands over chunks of chunkEvents
// events, which InsertEvents writes in transactions of insertBatch.
const (
	chunkEvents = 10_000
	insertBatch = 5_000
)

// worldInfo says what the database holds and how it got there.
type worldInfo struct {
	Fingerprint string `json:"fingerprint"`
	Events      int    `json:"events"`
	Projects    int    `json:"projects"`
	Features    int    `json:"features"`
	Users       int    `json:"users"`
	Seed        uint64 `json:"seed"`
	// SchemaHash identifies the store's schema the world was loaded under.
	SchemaHash string `json:"schemaHash,omitempty"`
	// EventsInDatabase is the event count when the load ended or the world
	// was reused; lifecycle completions of earlier runs add to it.
	EventsInDatabase int  `json:"eventsInDatabase"`
	Reused           bool `json:"reused"`
	// BuildSeconds and EventsPerSecond describe the load (0 when reused),
	// generation included.
	BuildSeconds    float64 `json:"buildSeconds,omitempty"`
	EventsPerSecond float64 `json:"eventsPerSecond,omitempty"`
}

// reuseSlack is how many events beyond the world's own a reused database
// may hold: lifecycle completions of earlier runs append events.
func reuseSlack(events int) int { return max(events/20, 10_000) }

// bulkInserter is the bulk path of bunstore.Store.
type bulkInserter interface {
	InsertEvents(ctx context.Context, events []flagadmin.Event, batchSize int) error
}

// textMerger is the merge of bunstore.Store's full-text index.
type textMerger interface {
	MergeTextIndex(ctx context.Context) error
}

// prepareWorld makes the database hold world w: it reuses a database whose
// marker names w's fingerprint (and whose event count fits), else it
// (re)creates the database and loads w through the bulk path, showing
// progress on progress. It returns the open store.
func prepareWorld(ctx context.Context, d *database, w *worldgen.World, rebuild bool, progress io.Writer) (flagadmin.Store, func() error, worldInfo, error) {
	cfg := w.Config()
	info := worldInfo{Fingerprint: cfg.Fingerprint(), Events: cfg.Events, Projects: cfg.Projects,
		Features: cfg.Features, Users: cfg.Users, Seed: cfg.Seed}
	fail := func(err error) (flagadmin.Store, func() error, worldInfo, error) {
		return nil, nil, info, err
	}
	build := true
	if d.Persistent {
		if err := d.ensureExists(ctx); err != nil {
			return fail(fmt.Errorf("create the database %s: %w", bunstore.RedactURL(d.URL), err))
		}
		st, err := d.inspect(ctx)
		if err != nil {
			return fail(fmt.Errorf("inspect the database %s: %w", bunstore.RedactURL(d.URL), err))
		}
		switch {
		case rebuild:
			fmt.Fprintf(progress, "--rebuild: dropping %s\n", bunstore.RedactURL(d.URL))
		case st.Tables == 0:
		case st.Fingerprint == "":
			return fail(fmt.Errorf("the database %s holds %d tables but no flagadmin-bench world; pass --rebuild to drop everything in it and load the world", bunstore.RedactURL(d.URL), st.Tables))
		case st.Fingerprint != info.Fingerprint:
			fmt.Fprintf(progress, "the database holds another world (%s): rebuilding\n", st.Fingerprint)
			rebuild = true
		case st.State != markerReady:
			fmt.Fprintln(progress, "the database holds an unfinished load: rebuilding")
			rebuild = true
		default:
			fresh, err := d.freshSchemaHash(ctx)
			if err != nil {
				return fail(fmt.Errorf("probe the store's current schema: %w", err))
			}
			switch migrated, err := d.migrateWorld(ctx, fresh, st.Schema, progress); {
			case err != nil:
				return fail(err)
			case migrated:
				build = false
				info.SchemaHash = fresh
			default:
				rebuild = true
			}
		}
		if rebuild {
			if err := d.recreate(ctx); err != nil {
				return fail(fmt.Errorf("recreate the database %s: %w", bunstore.RedactURL(d.URL), err))
			}
		}
	}
	store, closeStore, err := openStore(ctx, d.URL)
	if err != nil {
		return fail(err)
	}
	if !build {
		n, err := countEvents(ctx, store)
		if err == nil && n >= cfg.Events && n <= cfg.Events+reuseSlack(cfg.Events) {
			info.Reused, info.EventsInDatabase = true, n
			fmt.Fprintf(progress, "reusing the world in %s (%d events)\n", bunstore.RedactURL(d.URL), n)
			return store, closeStore, info, nil
		}
		closeStore()
		if err != nil {
			fmt.Fprintf(progress, "the database's marker names this world but its events cannot be counted (%v): rebuilding\n", err)
		} else {
			fmt.Fprintf(progress, "the database's marker names this world but it holds %d events: rebuilding\n", n)
		}
		if err := d.recreate(ctx); err != nil {
			return fail(fmt.Errorf("recreate the database %s: %w", bunstore.RedactURL(d.URL), err))
		}
		if store, closeStore, err = openStore(ctx, d.URL); err != nil {
			return fail(err)
		}
	}
	start := time.Now()
	if err := loadWorld(ctx, d, store, w, progress); err != nil {
		closeStore()
		return fail(fmt.Errorf("load the world into %s: %w", bunstore.RedactURL(d.URL), err))
	}
	if d.Persistent {
		if info.SchemaHash, err = d.schemaHash(ctx); err != nil {
			closeStore()
			return fail(err)
		}
	}
	info.BuildSeconds = time.Since(start).Seconds()
	info.EventsPerSecond = float64(cfg.Events) / info.BuildSeconds
	if info.EventsInDatabase, err = countEvents(ctx, store); err != nil {
		closeStore()
		return fail(err)
	}
	return store, closeStore, info, nil
}

// migrateWorld brings a world loaded under an older schema up to date the
// way a deployer upgrades: by opening the store, which runs the new
// migrations (with their backfills) on the data in place. It reports true
// when the migrated schema is exactly the one a fresh database gets
// (fresh), recording it in the marker; false (rebuild instead) when it is
// not, which would also mean the migrations and a fresh install disagree.
func (d *database) migrateWorld(ctx context.Context, fresh, loaded string, progress io.Writer) (bool, error) {
	if fresh == loaded {
		return true, nil
	}
	fmt.Fprintln(progress, "the store's schema changed since the world was loaded: migrating the world in place")
	start := time.Now()
	_, closeStore, err := openStore(ctx, d.URL)
	if err != nil {
		return false, fmt.Errorf("migrate the world in %s: %w", bunstore.RedactURL(d.URL), err)
	}
	if err := d.awaitTextIndexed(ctx, progress); err != nil {
		closeStore()
		return false, fmt.Errorf("migrate the world in %s: %w", bunstore.RedactURL(d.URL), err)
	}
	if err := closeStore(); err != nil {
		return false, fmt.Errorf("migrate the world in %s: %w", bunstore.RedactURL(d.URL), err)
	}
	got, err := d.schemaHash(ctx)
	if err != nil {
		return false, err
	}
	if got != fresh {
		fmt.Fprintln(progress, "the migrated schema differs from a fresh database's: rebuilding")
		return false, nil
	}
	st, err := d.inspect(ctx)
	if err != nil {
		return false, err
	}
	if err := d.setMarker(ctx, st.Fingerprint, markerReady, got); err != nil {
		return false, err
	}
	if err := d.analyze(ctx); err != nil {
		return false, err
	}
	fmt.Fprintf(progress, "migrated the world in %s\n", time.Since(start).Round(time.Second))
	return true, nil
}

// awaitTextIndexed waits, on SQLite, until the open store has indexed the
// texts that a migration left to its full-text backlog
// (events_text_pending, until the index is merged after them), telling
// how many remain every 5 seconds: a run
// copies the world, and a copy with a backlog would measure free text
// scanning the texts.
func (d *database) awaitTextIndexed(ctx context.Context, progress io.Writer) error {
	if d.System != "sqlite" {
		return nil
	}
	db, err := d.openSelf()
	if err != nil {
		return err
	}
	defer db.Close()
	told := time.Now()
	for {
		var ranges, pending int64
		err := db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(to_id - from_id), 0) FROM events_text_pending").Scan(&ranges, &pending)
		if err != nil || ranges == 0 {
			return err // indexed and merged
		}
		if time.Since(told) >= 5*time.Second {
			fmt.Fprintf(progress, "indexing the texts the migration left to the full-text backlog: %d events to go, then the merge of the index\n", pending)
			told = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// countEvents returns the number of events in the store.
func countEvents(ctx context.Context, store flagadmin.Store) (int, error) {
	page, err := store.SearchEvents(ctx, flagadmin.EventQuery{})
	return page.Total, err
}

// loadWorld writes w into an empty store: the marker (building), the
// world's rows in one Store.Write, the events through the bulk path, the
// full-text index merged, fresh planner statistics, then the marker
// (ready).
func loadWorld(ctx context.Context, d *database, store flagadmin.Store, w *worldgen.World, progress io.Writer) error {
	cfg := w.Config()
	fp := cfg.Fingerprint()
	if d.Persistent {
		if err := d.setMarker(ctx, fp, markerBuilding, ""); err != nil {
			return fmt.Errorf("write the marker: %w", err)
		}
	}
	fmt.Fprintf(progress, "building the world: %d projects, %d features, %d users, %d events\n",
		cfg.Projects, cfg.Features, cfg.Users, cfg.Events)
	if err := store.Write(ctx, w.Batch()); err != nil {
		return err
	}
	bulk, _ := store.(bulkInserter)
	insert := func(events []flagadmin.Event) error {
		if bulk != nil {
			return bulk.InsertEvents(ctx, events, insertBatch)
		}
		return store.Write(ctx, &flagadmin.Batch{Events: events})
	}

	// The generator runs ahead of the inserts, on its own goroutine.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks := make(chan []flagadmin.Event, 4)
	go func() {
		defer close(chunks)
		for chunk := range w.Events(chunkEvents) {
			select {
			case chunks <- chunk:
			case <-ctx.Done():
				return
			}
		}
	}()
	p := newProgress(progress, cfg.Events)
	stopProgress := p.start()
	var err error
	for chunk := range chunks {
		if err = insert(chunk); err != nil {
			break
		}
		p.add(len(chunk))
	}
	stopProgress()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// As a server leaves it once its writes pause.
	if m, ok := store.(textMerger); ok {
		fmt.Fprintln(progress, "merging the full-text index")
		if err := m.MergeTextIndex(ctx); err != nil {
			return err
		}
	}
	if d.Persistent {
		fmt.Fprintln(progress, "updating the planner statistics")
		if err := d.analyze(ctx); err != nil {
			return err
		}
		schema, err := d.schemaHash(ctx)
		if err != nil {
			return fmt.Errorf("read the schema: %w", err)
		}
		if err := d.setMarker(ctx, fp, markerReady, schema); err != nil {
			return fmt.Errorf("write the marker: %w", err)
		}
	}
	return nil
}

// progress reports a long count on a terminal line refreshed every second
// (or, when the output is not a terminal, a line every 5 seconds).
type progress struct {
	out   io.Writer
	tty   bool
	total int
	done  atomic.Int64
	begin time.Time
}

func newProgress(out io.Writer, total int) *progress {
	p := &progress{out: out, total: total}
	if f, ok := out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) add(n int) { p.done.Add(int64(n)) }

// start prints the progress until the returned function is called, which
// prints the final line.
func (p *progress) start() func() {
	p.begin = time.Now()
	every := 5 * time.Second
	if p.tty {
		every = time.Second
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.print(false)
			case <-stop:
				p.print(true)
				return
			}
		}
	}()
	return func() {
		close(stop)
		<-stopped
	}
}

func (p *progress) print(final bool) {
	done := int(p.done.Load())
	elapsed := time.Since(p.begin)
	rate := float64(done) / max(elapsed.Seconds(), 1e-9)
	line := fmt.Sprintf("events %s / %s (%.1f%%), %s events/s", thousands(int64(done)), thousands(int64(p.total)),
		100*float64(done)/float64(max(p.total, 1)), thousands(int64(rate)))
	if final {
		line += fmt.Sprintf(", done in %s", elapsed.Round(100*time.Millisecond))
	} else if rate > 0 {
		eta := time.Duration(float64(p.total-done) / rate * float64(time.Second))
		line += fmt.Sprintf(", ETA %s", eta.Round(time.Second))
	}
	switch {
	case p.tty && final:
		fmt.Fprintf(p.out, "\r\033[K%s\n", line)
	case p.tty:
		fmt.Fprintf(p.out, "\r\033[K%s", line)
	default:
		fmt.Fprintln(p.out, line)
	}
}

// thousands formats n with commas between groups of three digits.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
