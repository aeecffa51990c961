package bunstore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/faultsql"
)

// hiddenWorld has a private project its Viewer is not a member of.
const hiddenWorld = `{
  "users": [{"id": 3, "name": "Vic", "rootRole": "Viewer"}],
  "projects": [{"id": "secret", "mode": "private"}],
  "features": [{"name": "f-secret", "project": "secret"}]
}`

// BenchmarkLifecycleNotFound times a Viewer's lifecycle completion that
// answers 404, for a private project the Viewer cannot see ("hidden") and for
// a project that does not exist ("missing"), on SQLite and PostgreSQL
// (skipped without a server). The two should take the same time: a
// difference would tell a caller that the private project exists. Compare with benchstat or by eye:
//
//	go test ./adapters/bunstore/ -run '^$' -bench LifecycleNotFound -count 10
func BenchmarkLifecycleNotFound(b *testing.B) {
	ctx := context.Background()
	for _, e := range []struct {
		name string
		url  func(testing.TB) string
	}{{"sqlite", dbtest.SQLite}, {"postgres", dbtest.Postgres}} {
		b.Run(e.name, func(b *testing.B) {
			store, err := bunstore.Open(ctx, e.url(b))
			if err != nil {
				b.Fatalf("Open: %v", err)
			}
			b.Cleanup(func() { store.Close() })
			svc := flagadmin.NewService(store)
			if err := svc.LoadSeed(ctx, strings.NewReader(hiddenWorld)); err != nil {
				b.Fatalf("LoadSeed: %v", err)
			}
			viewer, err := store.User(ctx, 3)
			if err != nil {
				b.Fatal(err)
			}
			p := flagadmin.AsUser(viewer)
			req := flagadmin.CompleteRequest{Status: flagadmin.StatusKept}
			for _, project := range []struct{ name, id string }{{"hidden", "secret"}, {"missing", "nothing"}} {
				b.Run(project.name, func(b *testing.B) {
					for b.Loop() {
						err := svc.CompleteLifecycle(ctx, p, project.id, "f-secret", req)
						if !errors.Is(err, flagadmin.ErrNotFound) {
							b.Fatalf("CompleteLifecycle: %v, want ErrNotFound", err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkLifecycleComplete times lifecycle completions that write (each
// flips a feature between kept and discarded, so every call records its
// event), from 16 goroutines over 64 features of one project, with the
// event order lock (record.go) and without it (eventOrderOff: its
// statements turned into no-ops by a fault rule), on SQLite, PostgreSQL
// and MySQL (skipped without a server). The lock variant runs on a store
// as production opens it; the nolock variant on a second store of the
// same database whose connections pass through a faultsql wrapper. It
// reports completions/s, over the time until the last completion's leaf
// is appended:
//
//	go test ./adapters/bunstore/ -run '^$' -bench LifecycleComplete -count 5
func BenchmarkLifecycleComplete(b *testing.B) {
	ctx := context.Background()
	const features = 64
	var seed strings.Builder
	seed.WriteString(`{"projects": [{"id": "web"}], "features": [`)
	for i := range features {
		if i > 0 {
			seed.WriteString(",")
		}
		fmt.Fprintf(&seed, `{"name": "f-%d", "project": "web"}`, i)
	}
	seed.WriteString("]}")
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			url := e.url(b)
			plain := open(b, url)
			if err := flagadmin.NewService(plain).LoadSeed(ctx, strings.NewReader(seed.String())); err != nil {
				b.Fatalf("LoadSeed: %v", err)
			}
			p := flagadmin.AdminToken("bench")
			for _, lock := range []bool{true, false} {
				b.Run(map[bool]string{true: "lock", false: "nolock"}[lock], func(b *testing.B) {
					store := plain
					if !lock {
						var faults *faultsql.Faults
						store, faults = openWithFaults(b, url)
						defer eventOrderOff(b, store, faults, url)()
					}
					svc := flagadmin.NewService(store)
					var n atomic.Int64
					b.SetParallelism(16 / max(1, runtime.GOMAXPROCS(0)))
					start := time.Now()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							i := n.Add(1)
							status := flagadmin.StatusKept
							if (i/features)%2 == 1 {
								status = flagadmin.StatusDiscarded
							}
							err := svc.CompleteLifecycle(ctx, p, "web", fmt.Sprintf("f-%d", i%features), flagadmin.CompleteRequest{Status: status})
							if err != nil {
								b.Errorf("CompleteLifecycle: %v", err)
								return
							}
						}
					})
					// The leaves of the completions are appended after
					// their commits: the time counted ends once they all
					// are (LogSize waits for the store's own).
					if _, err := store.LogSize(ctx); err != nil {
						b.Fatalf("LogSize: %v", err)
					}
					b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "completions/s")
				})
			}
		})
	}
}
