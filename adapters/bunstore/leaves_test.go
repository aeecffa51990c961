package bunstore_test

import (
	"context"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/faultsql"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// leafEvent is an event of feature n, created at at.
func leafEvent(n int, at time.Time) flagadmin.Event {
	return flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "ada", CreatedAt: at,
		Project: ptrTo("web"), FeatureName: ptrTo(fmt.Sprintf("f-%d", n)), Data: []byte(fmt.Sprintf(`{"n":%d}`, n))}
}

// checkLog fails t unless the leaves s reads are one per stored event, in
// id order from index 0, each the hash of its event.
func checkLog(t *testing.T, s *bunstore.Store, want int) {
	t.Helper()
	ctx := context.Background()
	stored := events(t, s)
	if len(stored) != want {
		t.Fatalf("%d events stored, want %d", len(stored), want)
	}
	// Leaves first: a read past the last leaf appends those another
	// server's appender has not yet; LogSize then counts them.
	leaves, err := s.LogLeaves(ctx, 0, int64(want)+1)
	must(t, "LogLeaves", err)
	size, err := s.LogSize(ctx)
	must(t, "LogSize", err)
	if size != int64(want) || len(leaves) != want {
		t.Fatalf("LogSize %d, %d leaves read, want %d, a leaf per event", size, len(leaves), want)
	}
	byID := map[int64]flagadmin.Event{}
	for _, e := range stored {
		byID[e.ID] = e
	}
	var last int64
	for i, l := range leaves {
		e, ok := byID[l.EventID]
		if l.Index != int64(i) || !ok || l.EventID <= last {
			t.Fatalf("leaf %d (index %d) holds event %d after event %d: want consecutive indexes over the stored events in id order", i, l.Index, l.EventID, last)
		}
		last = l.EventID
		e.Salt = l.Salt
		hash, err := leaf.LeafHash(e)
		must(t, "LeafHash", err)
		if hash != l.Hash {
			t.Fatalf("leaf %d: its hash is not that of event %d", i, e.ID)
		}
	}
}

// Writers on two servers sharing one database append their events
// concurrently; the leaves, appended after the commits by both servers'
// appenders, end up one per event, in id order, whichever server reads,
// and an appender that collides with the other's leaves runs again at
// once, without a failure to log.
func TestLeavesOfConcurrentWriters(t *testing.T) {
	forMigratedEngines(t, func(t *testing.T, newURL func(testing.TB) string) {
		url := newURL(t)
		var logs syncbuffer.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		a, b := open(t, url, bunstore.WithLogger(logger)), open(t, url, bunstore.WithLogger(logger))
		defer func() {
			if logs.String() != "" {
				t.Errorf("the stores logged:\n%s", logs.String())
			}
		}()
		const writers, writes = 4, 25
		var wg sync.WaitGroup
		for w := range writers {
			s := []*bunstore.Store{a, b}[w%2]
			wg.Go(func() {
				for i := range writes {
					batch := &flagadmin.Batch{Events: []flagadmin.Event{leafEvent(w*writes+i, time.Now()), leafEvent(w*writes+i, time.Now())}}
					if err := s.Write(context.Background(), batch); err != nil {
						t.Errorf("Write: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		checkLog(t, a, 2*writers*writes)
		checkLog(t, b, 2*writers*writes)
	})
}

// A server that stopped between committing events and appending their
// leaves leaves them to the others: a proof asked of another server finds
// the leaf, and a server that starts appends them before it answers.
func TestLeavesAStoppedServerLeft(t *testing.T) {
	forMigratedEngines(t, func(t *testing.T, newURL func(testing.TB) string) {
		ctx := context.Background()
		url := newURL(t)
		a := open(t, url)
		for i := range 10 {
			must(t, "Write", a.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{leafEvent(i, time.Now())}}))
		}
		checkLog(t, a, 10)
		before, err := a.LogLeaves(ctx, 0, 10)
		must(t, "LogLeaves", err)
		// As if a had stopped before appending its last three leaves.
		unappend := func() {
			t.Helper()
			_, err := bunstore.DB(a).NewDelete().TableExpr("log_leaves").Where("idx >= 7").Exec(ctx)
			must(t, "delete leaves", err)
		}

		b := open(t, url)
		checkLog(t, b, 10)
		unappend()
		idx, err := b.LeafIndex(ctx, before[9].EventID)
		must(t, "LeafIndex on another server", err)
		if idx != 9 {
			t.Errorf("LeafIndex: got %d, want 9", idx)
		}
		checkLog(t, b, 10)

		unappend()
		c := open(t, url)
		size, err := c.LogSize(ctx)
		must(t, "LogSize", err)
		if size != 10 {
			t.Errorf("LogSize of a server just started: got %d, want 10: its start appends the leaves left behind", size)
		}
		after, err := c.LogLeaves(ctx, 0, 10)
		must(t, "LogLeaves", err)
		for i := range after {
			if after[i].Hash != before[i].Hash || after[i].EventID != before[i].EventID {
				t.Errorf("leaf %d appended again differs: event %d, want %d", i, after[i].EventID, before[i].EventID)
			}
		}
	})
}

// Retention never prunes an event whose leaf is not appended yet: it would
// leave no trace in the log. A server appends the leaves other servers
// left before it prunes; one that appends only its own (here, as a
// verifier would be opened) skips their events. Once the leaves are
// there, they go.
func TestPruneWaitsForTheLeaf(t *testing.T) {
	forMigratedEngines(t, func(t *testing.T, newURL func(testing.TB) string) {
		ctx := context.Background()
		url := newURL(t)
		s := open(t, url)
		old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range 5 {
			must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{leafEvent(i, old.Add(time.Duration(i)*time.Minute))}}))
		}
		checkLog(t, s, 5)
		stored := events(t, s) // newest first
		// The last two events' leaves as if not appended yet.
		_, err := bunstore.DB(s).NewDelete().TableExpr("log_leaves").Where("idx >= 3").Exec(ctx)
		must(t, "delete leaves", err)

		before := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
		cutoff := func(*flagadmin.Event) (time.Time, error) { return before, nil }
		prune := func(s *bunstore.Store) []int64 {
			t.Helper()
			ids, err := s.PruneEvents(ctx, 100, cutoff, func(ids []int64) (flagadmin.Event, error) {
				return vlog.PrunedEvent(ids, before, time.Hour, time.Now())
			})
			must(t, "PruneEvents", err)
			return ids
		}
		own := open(t, url, bunstore.WithoutAppendingOthers())
		if ids, want := prune(own), []int64{stored[4].ID, stored[3].ID, stored[2].ID}; fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Fatalf("pruned %v, want %v: only the events with leaves", ids, want)
		}
		// Its pass's own event appended the leaves past the last; delete
		// them again for the other server.
		_, err = bunstore.DB(s).NewDelete().TableExpr("log_leaves").Where("idx >= 3").Exec(ctx)
		must(t, "delete leaves", err)
		if ids, want := prune(s), []int64{stored[1].ID, stored[0].ID}; fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Fatalf("pruned %v, want %v: the rest, once their leaves are appended", ids, want)
		}
		leaves, err := s.LogLeaves(ctx, 0, 5)
		must(t, "LogLeaves", err)
		for i, l := range leaves {
			if !l.Pruned || l.EventID != stored[4-i].ID {
				t.Errorf("leaf %d: event %d, pruned %v; want event %d, pruned", i, l.EventID, l.Pruned, stored[4-i].ID)
			}
		}
	})
}

// TestLeafAppendReadsTheLogsEndFromAnIndex: every statement that reads a
// maximum of log_leaves, as the appender does before each append, reads
// it from an index on SQLite, which does so for a lone MAX in a statement
// and scans the whole table for two.
func TestLeafAppendReadsTheLogsEndFromAnIndex(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[string]bool{}
	faults := faultsql.New()
	faults.Add(faultsql.Rule{Match: `MAX\(.*\bFROM log_leaves\b`, Before: func(_ context.Context, query string) error {
		mu.Lock()
		defer mu.Unlock()
		seen[query] = true
		return nil
	}})
	s := open(t, dbtest.SQLite(t), bunstore.WithConnector(func(c driver.Connector) driver.Connector { return faults.Wrap(c) }))
	must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: textEvents(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC))}))
	if _, err := s.LogSize(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	queries := slices.Collect(maps.Keys(seen))
	mu.Unlock()
	if len(queries) == 0 {
		t.Fatal("no statement read a maximum of log_leaves")
	}
	for _, query := range queries {
		var plan []struct {
			ID      int    `bun:"id"`
			Parent  int    `bun:"parent"`
			NotUsed int    `bun:"notused"`
			Detail  string `bun:"detail"`
		}
		must(t, "EXPLAIN QUERY PLAN", bunstore.DB(s).NewRaw("EXPLAIN QUERY PLAN "+query).Scan(ctx, &plan))
		for _, step := range plan {
			if strings.HasPrefix(step.Detail, "SCAN log_leaves") {
				t.Errorf("%s: %s", query, step.Detail)
			}
		}
	}
}
