package bunstore

import (
	"context"
	"testing"

	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// BenchmarkAppendLeaves times the append of the log's leaves of 10,000
// stored events (two appends of appendBatch), per leaf, on each database
// the environment offers: their rows read, their leaves computed, then
// inserted (by COPY on PostgreSQL). Each round deletes the leaves first,
// untimed.
func BenchmarkAppendLeaves(b *testing.B) {
	for _, db := range []struct {
		name string
		url  func(testing.TB) string
	}{{"postgres", dbtest.Postgres}, {"mysql", dbtest.MySQL}, {"sqlite", dbtest.SQLite}} {
		b.Run(db.name, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, db.url(b))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const events = 2 * appendBatch
			if err := s.InsertEvents(ctx, bulkEvents(events, 0), 0); err != nil {
				b.Fatal(err)
			}
			if err := s.settleLeaves(ctx); err != nil {
				b.Fatal(err)
			}
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
