package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/eventfeed"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/eventtest"
)

// The live stream over the SQL store, on SQLite, PostgreSQL and MySQL
// (the servers skipped when not configured; see internal/dbtest).

var streamEngines = []struct {
	name string
	url  func(testing.TB) string
}{{"SQLite", dbtest.SQLite}, {"Postgres", dbtest.Postgres}, {"MySQL", dbtest.MySQL}}

// openSQL opens a store on url, closed when the test ends.
func openSQL(t *testing.T, url string) *bunstore.Store {
	t.Helper()
	s, err := bunstore.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStreamTwoServersOneDatabase: two servers (two stores, two feeds at
// the default interval, two HTTP servers) on one database; an event
// written through one reaches a stream on the other within 1 s of its
// commit.
func TestStreamTwoServersOneDatabase(t *testing.T) {
	for _, engine := range streamEngines {
		t.Run(engine.name, func(t *testing.T) {
			url := engine.url(t)
			one, two := openSQL(t, url), openSQL(t, url)
			if err := flagadmin.NewService(one).LoadSeed(context.Background(), strings.NewReader(testSeed)); err != nil {
				t.Fatal(err)
			}
			a := newStreamEnvEvery(t, one, Config{}, eventfeed.DefaultInterval)
			b := newStreamEnvEvery(t, two, Config{}, eventfeed.DefaultInterval)
			s := b.openStream(t, "/api/admin/events/stream?type=IS:feature-completed", adminToken, nil)
			s.next(t, time.Second) // the start position
			for i, status := range []string{"kept", "discarded", "kept"} {
				req, err := http.NewRequest(http.MethodPost, a.ts.URL+"/api/admin/projects/default/features/new-checkout/lifecycle/complete",
					strings.NewReader(`{"status":"`+status+`"}`))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", adminToken)
				resp, err := a.ts.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				committed := time.Now()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("complete: got %d", resp.StatusCode)
				}
				ev := s.events(t, 1)[0]
				if took := time.Since(committed); took > time.Second {
					t.Errorf("event %d reached the other server's stream after %v, want within 1 s", i, took)
				}
				if string(ev.Data) == "" || !strings.Contains(string(ev.Data), status) {
					t.Errorf("event %d: data %s, want status %s", i, ev.Data, status)
				}
			}
		})
	}
}

// TestStreamExactlyOnceUnderConcurrentWriters: 8 writers append 200
// batches of 1 to 3 events while three streams follow (one from the
// start of the log, one from its middle, one from now); each gets every
// event after its start, in id order, once.
func TestStreamExactlyOnceUnderConcurrentWriters(t *testing.T) {
	for _, engine := range streamEngines {
		t.Run(engine.name, func(t *testing.T) {
			store := openSQL(t, engine.url(t))
			if err := flagadmin.NewService(store).LoadSeed(context.Background(), strings.NewReader(testSeed)); err != nil {
				t.Fatal(err)
			}
			e := newStreamEnv(t, store, Config{})
			streams := []*sseStream{
				e.openStream(t, "/api/admin/events/stream?afterId=0", adminToken, nil),
				e.openStream(t, "/api/admin/events/stream", adminToken, map[string]string{"Last-Event-ID": "3"}),
				e.openStream(t, "/api/admin/events/stream", adminToken, nil),
			}
			starts := []int64{0, 3, 5}
			const writers, writes = 8, 25
			var wg sync.WaitGroup
			total := 0
			for w := range writers {
				for j := range writes {
					total += 1 + (w+j)%3
				}
				wg.Go(func() {
					for j := range writes {
						var events []flagadmin.Event
						for k := range 1 + (w+j)%3 {
							events = append(events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: fmt.Sprintf("w%d-%d-%d", w, j, k),
								CreatedAt: time.Now().UTC(), Project: new("default")})
						}
						if err := store.Write(context.Background(), &flagadmin.Batch{Events: events}); err != nil {
							t.Errorf("Write: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			// Every id in the log (a retried transaction leaves a gap).
			var all []int64
			err := store.ExportEvents(context.Background(), flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error {
				all = append(all, e.ID)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 5+total {
				t.Fatalf("the log holds %d events, want %d", len(all), 5+total)
			}
			for i, s := range streams {
				want := slices.DeleteFunc(slices.Clone(all), func(id int64) bool { return id <= starts[i] })
				got := eventtest.IDs(s.events(t, len(want)))
				if !slices.Equal(got, want) {
					t.Errorf("stream %d (after %d): got %d events, want the %d after it in id order once each", i, starts[i], len(got), len(want))
				}
			}
			// Nothing more: no duplicate arrives late.
			time.Sleep(50 * time.Millisecond)
			for i, s := range streams {
				select {
				case b := <-s.blocks:
					if b.data != "" {
						t.Errorf("stream %d: an extra event %s", i, b.id)
					}
				default:
				}
			}
		})
	}
}
