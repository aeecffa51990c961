package bunstore_test

// Benchmarks of the store's tuning: each speed-up on and off
// (bunstore.WithoutTuning), on the varied workload it is meant for, from
// concurrent goroutines, the arms alternating in rounds so that the
// machine's drift falls on both.
// scripts/bench-tuning.sh runs them all and prints the table. They skip
// unless a database is configured:
//
//	FLAGADMIN_TUNING_POSTGRES_URL  a PostgreSQL database holding the default
//	                               worldgen world (1,000,000 events), which
//	                               the benchmarks write to: give a copy
//	FLAGADMIN_BENCH_SQLITE         the SQLite benchmark file (loadedWorld),
//	                               for the event counts on SQLite
//	FLAGADMIN_TUNING_DURATION      measured time of each arm (default 8s),
//	                               in 4 rounds, each after 1s of warm-up
//
// Each writes lines "TUNING <mechanism> <workload> <metric> <on> <off>" on
// stdout for the script's table, besides its metrics.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

const (
	envTuningPostgres = "FLAGADMIN_TUNING_POSTGRES_URL"
	envTuningDuration = "FLAGADMIN_TUNING_DURATION"
)

// tuningWorkers is the number of concurrent requests: the load tool's
// connections.
const tuningWorkers = 16

// tuningWorld is a store holding the benchmark world, with the principals
// of the varied workload.
type tuningWorld struct {
	world   *worldgen.World
	url     string
	store   *bunstore.Store
	svc     *flagadmin.Service
	admin   flagadmin.Principal
	callers []flagadmin.Principal
	without map[bunstore.Tuning]*bunstore.Store
}

// storeWithout returns a store on the world's database with the tuning t
// turned off (opened once). The arms leave the summaries true, as a
// database's one set of them must be (bunstore.WithoutTuning): the arm
// without event_counts only reads, and the one without project_stats
// writes lifecycle completions, which change no figure of it.
func (tw *tuningWorld) storeWithout(b *testing.B, t bunstore.Tuning) *bunstore.Store {
	tuningMu.Lock()
	defer tuningMu.Unlock()
	if s, ok := tw.without[t]; ok {
		return s
	}
	store, err := bunstore.Open(context.Background(), tw.url, bunstore.WithoutMigrate(), bunstore.WithoutTuning(t))
	if err != nil {
		b.Fatalf("open without %s: %v", t, err)
	}
	tw.without[t] = store
	return store
}

var (
	tuningMu sync.Mutex
	tuningPG *tuningWorld
)

// tuningPostgres returns the world of FLAGADMIN_TUNING_POSTGRES_URL, or
// skips b.
func tuningPostgres(b *testing.B) *tuningWorld {
	b.Helper()
	url := os.Getenv(envTuningPostgres)
	if url == "" {
		b.Skipf("set %s to a copy of a PostgreSQL database holding the world (see scripts/bench-tuning.sh)", envTuningPostgres)
	}
	tuningMu.Lock()
	defer tuningMu.Unlock()
	if tuningPG != nil {
		return tuningPG
	}
	cfg, err := benchConfig()
	if err != nil {
		b.Fatal(err)
	}
	world, err := worldgen.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	store, err := bunstore.Open(ctx, url)
	if err != nil {
		b.Fatalf("open: %v", err)
	}
	page, err := store.SearchEvents(ctx, flagadmin.EventQuery{})
	if err != nil || page.Total < cfg.Events {
		store.Close()
		b.Fatalf("%s holds %d events (%v), want the world's %d at least", envTuningPostgres, page.Total, err, cfg.Events)
	}
	tuningPG = newTuningWorld(b, world, url, store)
	return tuningPG
}

// tuningSQLite returns the SQLite benchmark world (loaded on first use), or
// skips b.
func tuningSQLite(b *testing.B) *tuningWorld {
	b.Helper()
	bw := loadedWorld(b, benchTargets[2])
	return newTuningWorld(b, bw.world, bw.url, bw.store)
}

// newTuningWorld authenticates the callers of the varied workload: the
// world's admin tokens and up to 4 users of each root role, so that
// visibility varies (as cmd/flagadmin-bench's varied kinds).
func newTuningWorld(b *testing.B, world *worldgen.World, url string, store *bunstore.Store) *tuningWorld {
	b.Helper()
	ctx := context.Background()
	tw := &tuningWorld{world: world, url: url, store: store, svc: flagadmin.NewService(store), without: map[bunstore.Tuning]*bunstore.Store{}}
	auth := func(secret string) {
		p, err := tw.svc.Authenticate(ctx, "Bearer "+secret)
		if err != nil {
			b.Fatalf("authenticate: %v", err)
		}
		tw.callers = append(tw.callers, p)
	}
	for i := range worldgen.AdminTokenCount {
		auth(world.AdminSecret(i))
	}
	tw.admin = tw.callers[0]
	roles := map[int64]flagadmin.RootRole{}
	for _, u := range world.Users() {
		roles[u.ID] = u.RootRole
	}
	perRole := map[flagadmin.RootRole]int{}
	for _, id := range world.TokenUsers() {
		if secret, ok := world.UserSecret(id); ok && perRole[roles[id]] < 4 {
			perRole[roles[id]]++
			auth(secret)
		}
	}
	return tw
}

var (
	flipsMu sync.Mutex
	flips   = map[string]int{}
)

// nextStatus is the outcome of a feature's next lifecycle completion:
// discarded and kept in turn, so that each records an event.
func nextStatus(feature string) string {
	flipsMu.Lock()
	defer flipsMu.Unlock()
	flips[feature]++
	if flips[feature]%2 == 0 {
		return flagadmin.StatusKept
	}
	return flagadmin.StatusDiscarded
}

// tuningDuration is the measured time of each arm.
func tuningDuration(b *testing.B) time.Duration {
	if s := os.Getenv(envTuningDuration); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("%s: %v", envTuningDuration, err)
		}
		return d
	}
	return 8 * time.Second
}

// tuningOp is one request of worker w, the n-th of the benchmark; it
// returns its class (the results are reported per class and for all).
type tuningOp func(ctx context.Context, w int, n uint64) (class string, err error)

// armStats are the latencies of an arm, by class, and the time measured.
type armStats struct {
	lat     map[string][]time.Duration
	elapsed time.Duration
}

func (s *armStats) add(o armStats) {
	if s.lat == nil {
		s.lat = map[string][]time.Duration{}
	}
	for c, l := range o.lat {
		s.lat[c] = append(s.lat[c], l...)
		s.lat["all"] = append(s.lat["all"], l...)
	}
	s.elapsed += o.elapsed
}

// rate is the requests of class per second.
func (s armStats) rate(class string) float64 {
	return float64(len(s.lat[class])) / s.elapsed.Seconds()
}

// quantile is the q-quantile of class's latencies, in milliseconds.
func (s armStats) quantile(class string, q float64) float64 {
	l := s.lat[class]
	if len(l) == 0 {
		return 0
	}
	slices.Sort(l)
	return float64(l[min(len(l)-1, int(q*float64(len(l))))]) / float64(time.Millisecond)
}

// runFor runs op from workers goroutines for d and returns the latencies.
func runFor(b *testing.B, workers int, d time.Duration, next *atomic.Uint64, op tuningOp) armStats {
	ctx := context.Background()
	deadline := time.Now().Add(d)
	lats := make([]map[string][]time.Duration, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		lats[w] = map[string][]time.Duration{}
		wg.Go(func() {
			for time.Now().Before(deadline) {
				t := time.Now()
				class, err := op(ctx, w, next.Add(1))
				if err != nil {
					b.Errorf("%s: %v", class, err)
					return
				}
				lats[w][class] = append(lats[w][class], time.Since(t))
			}
		})
	}
	wg.Wait()
	out := armStats{lat: map[string][]time.Duration{}, elapsed: time.Since(start)}
	for _, l := range lats {
		for c, ds := range l {
			out.lat[c] = append(out.lat[c], ds...)
		}
	}
	return out
}

// arm is one setting of a mechanism: op serves its requests.
type arm struct {
	name string
	op   tuningOp
}

// tuningRounds is the number of rounds of measureArms: the arms take turns
// several times, so that a change in the machine's load falls on each.
const tuningRounds = 4

// measureArms runs every arm for the tuning duration, in tuningRounds
// rounds (every other one in the reverse order), each after a second of
// warm-up, and returns their statistics by arm name.
func measureArms(b *testing.B, workers int, arms []arm) map[string]armStats {
	d := tuningDuration(b)
	var next atomic.Uint64
	out := map[string]armStats{}
	for round := range tuningRounds {
		order := slices.Clone(arms)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, a := range order {
			runFor(b, workers, time.Second, &next, a.op)
			st := out[a.name]
			st.add(runFor(b, workers, d/tuningRounds, &next, a.op))
			out[a.name] = st
			if b.Failed() {
				b.FailNow()
			}
		}
	}
	return out
}

// report prints the table lines of mechanism for workload, arm on against
// arm off, per class: requests/s, p50 and p99; and reports on's and
// off's requests/s of every class.
func report(b *testing.B, mechanism, workload string, res map[string]armStats, on, off string, classes ...string) {
	for _, c := range classes {
		a, z := res[on], res[off]
		name := workload
		if c != "all" {
			name += "/" + c
		}
		fmt.Printf("TUNING\t%s\t%s (%s vs %s)\treq/s\t%.1f\t%.1f\n", mechanism, name, on, off, a.rate(c), z.rate(c))
		fmt.Printf("TUNING\t%s\t%s (%s vs %s)\tp50 ms\t%.2f\t%.2f\n", mechanism, name, on, off, a.quantile(c, 0.5), z.quantile(c, 0.5))
		fmt.Printf("TUNING\t%s\t%s (%s vs %s)\tp99 ms\t%.2f\t%.2f\n", mechanism, name, on, off, a.quantile(c, 0.99), z.quantile(c, 0.99))
		unit := strings.NewReplacer(" ", "-", "/", "-").Replace(c)
		b.ReportMetric(a.rate(c), unit+"-"+on+"-req/s")
		b.ReportMetric(z.rate(c), unit+"-"+off+"-req/s")
	}
}

// BenchmarkTuningProjectFigures measures the project list's figures kept
// in project_stats at write time against computing them on every list, on
// PostgreSQL: 16 goroutines completing feature lifecycles (each writes one
// event of the feature's project), either all in one project (64 of its
// features) or each in a project of its own, while 2 more read the
// project list's figures (ProjectStats, 200 projects). A completion
// changes no figure, so both arms write the same rows but for the
// summaries' own: what they cost writers, and what they save readers.
func BenchmarkTuningProjectFigures(b *testing.B) {
	tw := tuningPostgres(b)
	byProject := map[string][]string{}
	var order []string
	for _, f := range tw.world.Features() {
		if f.ArchivedAt != nil {
			continue
		}
		if byProject[f.Project] == nil {
			order = append(order, f.Project)
		}
		byProject[f.Project] = append(byProject[f.Project], f.Name)
	}
	slices.SortStableFunc(order, func(a, b string) int { return len(byProject[b]) - len(byProject[a]) })
	cfg := tw.world.Config()
	user := int64(1)
	statsQuery := flagadmin.ProjectStatsQuery{FavoritesOf: &user, PotentiallyStaleBefore: flagadmin.PotentiallyStaleCutoffs(cfg.End)}
	const readers = 2
	workloads := []struct {
		name string
		pick func(w int, n uint64) (project, feature string)
	}{
		{"same project", func(_ int, n uint64) (string, string) {
			p := order[0]
			fs := byProject[p][:min(64, len(byProject[p]))]
			return p, fs[n%uint64(len(fs))]
		}},
		{"16 projects", func(w int, n uint64) (string, string) {
			p := order[w]
			return p, byProject[p][n%uint64(len(byProject[p]))]
		}},
	}
	computed := tw.storeWithout(b, bunstore.ProjectFigures)
	for _, wl := range workloads {
		op := func(store *bunstore.Store) tuningOp {
			svc := flagadmin.NewService(store)
			return func(ctx context.Context, w int, n uint64) (string, error) {
				if w >= tuningWorkers {
					_, err := store.ProjectStats(ctx, statsQuery)
					return "read", err
				}
				p, f := wl.pick(w, n)
				return "write", svc.CompleteLifecycle(ctx, tw.admin, p, f, flagadmin.CompleteRequest{Status: nextStatus(f)})
			}
		}
		res := measureArms(b, tuningWorkers+readers, []arm{{"kept", op(tw.store)}, {"computed", op(computed)}})
		report(b, "project figures", wl.name, res, "kept", "computed", "write", "read")
	}
}

// BenchmarkTuningEventCounts measures the event counts against counting,
// on pages at large offsets: pages of 50 at an offset drawn uniformly over
// the whole history, as a caller drawn from the varied callers (root
// admins see every event; Editors and Viewers have hidden projects and see
// only events with a project), on PostgreSQL and SQLite. With the counts,
// the total is read from them and the page skips whole months and days;
// without, the total is counted and the page read past its offset on the
// index.
func BenchmarkTuningEventCounts(b *testing.B) {
	for _, target := range []struct {
		name  string
		world func(*testing.B) *tuningWorld
	}{{"postgres", tuningPostgres}, {"sqlite", tuningSQLite}} {
		b.Run(target.name, func(b *testing.B) {
			tw := target.world(b)
			total := tw.world.Profile().Total
			op := func(svc *flagadmin.Service) tuningOp {
				return func(ctx context.Context, _ int, n uint64) (string, error) {
					r := rand.New(rand.NewPCG(11, n))
					p := tw.callers[r.IntN(len(tw.callers))]
					class := "root admin"
					if !p.IsRootAdmin() {
						class = "editor/viewer"
					}
					_, err := svc.SearchEvents(ctx, p, flagadmin.EventSearchParams{Offset: strconv.Itoa(r.IntN(total - 50)), Limit: "50"})
					return class, err
				}
			}
			res := measureArms(b, tuningWorkers, []arm{{"counts", op(tw.svc)}, {"counted", op(flagadmin.NewService(tw.storeWithout(b, bunstore.EventCounts)))}})
			report(b, "event counts", target.name+" random offsets", res, "counts", "counted", "all", "root admin", "editor/viewer")
		})
	}
}

// variedPages returns the request n of the varied page kinds (those of
// cmd/flagadmin-bench's varied/none, feature, project, type, createdBy,
// any-of and month): its class, caller and parameters.
func variedPages(tw *tuningWorld) func(n uint64) (string, flagadmin.Principal, flagadmin.EventSearchParams) {
	features, projects, users := tw.world.Features(), tw.world.Projects(), tw.world.Users()
	types := flagadmin.EventTypes()
	cfg := tw.world.Config()
	var months []time.Time
	for m := time.Date(cfg.Start.Year(), cfg.Start.Month(), 1, 0, 0, 0, 0, time.UTC); m.Before(cfg.End); m = m.AddDate(0, 1, 0) {
		months = append(months, m)
	}
	return func(n uint64) (string, flagadmin.Principal, flagadmin.EventSearchParams) {
		r := rand.New(rand.NewPCG(12, n))
		caller := tw.callers[r.IntN(len(tw.callers))]
		p := flagadmin.EventSearchParams{Limit: "50"}
		class := "single filter"
		switch r.IntN(7) {
		case 0:
			p.Offset = strconv.Itoa(50 * r.IntN(10))
		case 1:
			p.Feature = "IS:" + features[r.IntN(len(features))].Name
		case 2:
			p.Project = "IS:" + projects[r.IntN(len(projects))].ID
		case 3:
			p.Type = "IS:" + types[r.IntN(len(types))]
		case 4:
			p.CreatedBy = "IS:" + strconv.FormatInt(users[r.IntN(len(users))].ID, 10)
		case 5:
			class = "any-of"
			var ids []string
			for _, i := range r.Perm(len(projects))[:min(2+r.IntN(7), len(projects))] {
				ids = append(ids, projects[i].ID)
			}
			p.Project = "IS_ANY_OF:" + strings.Join(ids, ",")
		case 6:
			class = "month"
			m := months[r.IntN(len(months))]
			p.From, p.To = "IS:"+m.Format(time.DateOnly), "IS:"+m.AddDate(0, 1, -1).Format(time.DateOnly)
		}
		return class, caller, p
	}
}

// BenchmarkTuningPageStatements measures the page statements (one
// statement per page, prepared when one generic plan serves it, decoded
// from pgx's raw values) against the portable page (total, ids and rows in
// one read-only transaction through database/sql), on PostgreSQL, over the
// varied pages: one of the first 10 unfiltered pages, a random feature,
// project, type or creator, IS_ANY_OF of 2 to 8 random projects (which
// the statement reads each project apart), a random month; each as a
// random varied caller.
func BenchmarkTuningPageStatements(b *testing.B) {
	tw := tuningPostgres(b)
	draw := variedPages(tw)
	op := func(svc *flagadmin.Service) tuningOp {
		return func(ctx context.Context, _ int, n uint64) (string, error) {
			class, caller, p := draw(n)
			_, err := svc.SearchEvents(ctx, caller, p)
			return class, err
		}
	}
	res := measureArms(b, tuningWorkers, []arm{{"statements", op(tw.svc)}, {"portable", op(flagadmin.NewService(tw.storeWithout(b, bunstore.PageStatements)))}})
	report(b, "page statements", "postgres varied pages", res, "statements", "portable", "all", "single filter", "any-of", "month")
}

// frozenVersion is the store with a change counter that never moves (but
// is still read from the database): a result cache over it is never
// invalidated. It bounds from above what any finer invalidation could
// save (its answers may be stale: for measurement only).
type frozenVersion struct{ *bunstore.Store }

func (s frozenVersion) Version(ctx context.Context) (int64, error) {
	_, err := s.Store.Version(ctx)
	return 0, err
}

// BenchmarkTuningCacheInvalidation measures the result cache with its
// global invalidation (every write makes every cached result stale)
// against no cache, and against a cache that is never invalidated (the
// bound of a finer invalidation), on PostgreSQL: the varied mix of
// cmd/flagadmin-bench's varied/mixed through the Service, one request in
// ten a lifecycle completion, the others a varied page, a page at a random
// offset or the project list, each as a random varied caller, each request
// in its own cache scope (as the server).
func BenchmarkTuningCacheInvalidation(b *testing.B) {
	tw := tuningPostgres(b)
	draw := variedPages(tw)
	total := tw.world.Profile().Total
	var features []flagadmin.Feature
	for _, f := range tw.world.Features() {
		if f.ArchivedAt == nil {
			features = append(features, f)
		}
	}
	var completions atomic.Uint64
	global := storecache.New(tw.store, storecache.Options{ResultCacheSize: storecache.DefaultResultCacheSize})
	frozen := storecache.New(frozenVersion{tw.store}, storecache.Options{ResultCacheSize: storecache.DefaultResultCacheSize})
	mix := func(svc *flagadmin.Service) tuningOp {
		return func(ctx context.Context, _ int, n uint64) (string, error) {
			ctx = storecache.WithScope(ctx)
			if n%10 == 9 {
				f := features[completions.Add(1)%uint64(len(features))]
				return "write", svc.CompleteLifecycle(ctx, tw.admin, f.Project, f.Name, flagadmin.CompleteRequest{Status: nextStatus(f.Name)})
			}
			r := rand.New(rand.NewPCG(13, n))
			switch r.IntN(9) {
			case 0:
				_, err := svc.ListProjects(ctx, tw.callers[r.IntN(len(tw.callers))], flagadmin.ProjectListOptions{})
				return "read", err
			case 1:
				_, err := svc.SearchEvents(ctx, tw.callers[r.IntN(len(tw.callers))], flagadmin.EventSearchParams{Offset: strconv.Itoa(r.IntN(total - 50)), Limit: "50"})
				return "read", err
			}
			_, caller, p := draw(n)
			_, err := svc.SearchEvents(ctx, caller, p)
			return "read", err
		}
	}
	res := measureArms(b, tuningWorkers, []arm{
		{"global", mix(flagadmin.NewService(global))},
		{"no-cache", mix(flagadmin.NewService(tw.store))},
		{"never-invalidated", mix(flagadmin.NewService(frozen))},
	})
	report(b, "cache invalidation", "postgres varied mix, 1 write in 10", res, "global", "no-cache", "all", "read", "write")
	report(b, "cache invalidation", "postgres varied mix, 1 write in 10", res, "never-invalidated", "global", "all", "read")
	for name, s := range map[string]storecache.Stats{"global": global.Stats(), "never-invalidated": frozen.Stats()} {
		rate := float64(s.ResultHits) / max(1, float64(s.ResultHits+s.ResultMisses))
		fmt.Printf("TUNING\tcache invalidation\t%s hit rate\thits/(hits+misses)\t%.3f\t-\n", name, rate)
	}
}
