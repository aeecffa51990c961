package bunstore

import (
	"context"
	"reflect"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// everyDatabase is each database a test opens a store on, skipped where
// the environment offers none.
var everyDatabase = []struct {
	name string
	url  func(testing.TB) string
}{{"postgres", dbtest.Postgres}, {"mysql", dbtest.MySQL}, {"sqlite", dbtest.SQLite}}

// storeWithLeaves opens a store on url, closed at the end of the test,
// holding n events (bulkEvents) and their leaves.
func storeWithLeaves(tb testing.TB, url string, n int) *Store {
	tb.Helper()
	ctx := context.Background()
	s, err := Open(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := s.InsertEvents(ctx, bulkEvents(n, 0), 0); err != nil {
		tb.Fatal(err)
	}
	if err := s.settleLeaves(ctx); err != nil {
		tb.Fatal(err)
	}
	return s
}

// BenchmarkAppendLeaves times the append of the log's leaves of 10,000
// stored events (two appends of appendBatch), per leaf, on each database
// the environment offers: their rows read, their leaves computed, then
// inserted (by COPY on PostgreSQL). Each round deletes the leaves first,
// untimed.
func BenchmarkAppendLeaves(b *testing.B) {
	for _, db := range everyDatabase {
		b.Run(db.name, func(b *testing.B) {
			ctx := context.Background()
			const events = 2 * appendBatch
			s := storeWithLeaves(b, db.url(b), events)
			s.leaves.mu.Lock() // the store's appender waits
			defer s.leaves.mu.Unlock()
			for b.Loop() {
				b.StopTimer()
				if _, err := s.db.ExecContext(ctx, "DELETE FROM log_leaves"); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := s.appendAll(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/leaf")
		})
	}
}

// TestLeavesReadBackAsComputed: on each database the environment offers,
// the leaves the appender inserted (by COPY on PostgreSQL) read back as
// leavesOf computes them from the stored events: hash and content byte for
// byte, a missing project as NULL, every index in order.
func TestLeavesReadBackAsComputed(t *testing.T) {
	for _, db := range everyDatabase {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			s := storeWithLeaves(t, db.url(t), 700)
			var rows []stored.Event
			if err := s.db.NewSelect().Model(&rows).Column(leafEventColumns...).OrderExpr("id").Scan(ctx); err != nil {
				t.Fatal(err)
			}
			want, err := leavesOf(rows, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := leafRows(t, s)
			if len(got) != len(want) {
				t.Fatalf("%d leaves, want %d", len(got), len(want))
			}
			nulls := 0
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("leaf %d reads back as %+v, want %+v", i, got[i], want[i])
				}
				if got[i].Project == nil {
					nulls++
				}
			}
			if nulls == 0 {
				t.Error("no leaf without a project: the test checks none")
			}
		})
	}
}
