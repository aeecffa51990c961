package bunstore

import (
	"context"
	"slices"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// InsertEvents appends events in order, in transactions of batchSize events
// (1000 when batchSize < 1): the bulk path for imports and generated
// histories. PostgreSQL receives each batch with COPY, MySQL and SQLite with
// multi-row INSERTs, through record as every write. Ids are assigned in
// order but not written back into events. A failed batch is rolled back;
// the batches before it stay. The storage deadline (WithTimeout) applies
// to each batch.
func (s *Store) InsertEvents(ctx context.Context, events []flagadmin.Event, batchSize int) error {
	if batchSize < 1 {
		batchSize = 1000
	}
	for start := 0; start < len(events); start += batchSize {
		if err := s.insertBatch(ctx, events[start:min(len(events), start+batchSize)]); err != nil {
			return err
		}
	}
	return nil
}

// insertBatch is one batch of InsertEvents, under the storage deadline.
func (s *Store) insertBatch(ctx context.Context, batch []flagadmin.Event) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.inTx(ctx, "insert events", func(ctx context.Context, t *txn) (*changes, error) {
		return &changes{events: slices.Clone(batch), bulk: true}, nil
	})
}

// LastEventID returns the id of the newest committed event, 0 when there
// is none: where a live stream's feed starts (adapters/eventfeed). Every
// smaller id is settled (record.go).
func (s *Store) LastEventID(ctx context.Context) (int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var id int64
	if err := s.rdb.DB.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM events").Scan(&id); err != nil {
		return 0, s.fail("last event id", err)
	}
	return id, nil
}
