package memstore

import (
	"context"
	"sort"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// ExportEvents implements flagadmin.Store with flagadmin.EventQuery.Matches.
// Events are kept in id order: each batch finds where it starts by binary
// search, copies up to flagadmin.ExportBatchSize matches under the read
// lock, and hands them to fn with the lock released, so writers are never
// held up by a slow fn.
func (s *Store) ExportEvents(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error {
	batch := make([]flagadmin.Event, 0, flagadmin.ExportBatchSize)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var done bool
		batch, afterID, done = s.exportBatch(q, afterID, batch[:0])
		for _, e := range batch {
			if err := fn(e); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
	}
}

// exportBatch appends to batch, under the read lock, the matches of q
// after afterID until batch is full; next is where the scan stopped, done
// whether it reached the newest event.
func (s *Store) exportBatch(q flagadmin.EventQuery, afterID int64, batch []flagadmin.Event) (_ []flagadmin.Event, next int64, done bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	events := s.w.events
	i := sort.Search(len(events), func(i int) bool { return events[i].ID > afterID })
	for ; i < len(events) && len(batch) < cap(batch); i++ {
		if e := events[i]; q.Matches(e.Event, e.payload, e.meta) {
			batch = append(batch, cloneEvent(e.Event))
		}
	}
	if i < len(events) {
		afterID = events[i-1].ID // the scan stopped with a full batch
	}
	return batch, afterID, i == len(events)
}

// LastEventID returns the id of the newest event, 0 when there is none:
// where a live stream's feed starts (adapters/eventfeed).
func (s *Store) LastEventID(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if n := len(s.w.events); n > 0 {
		return s.w.events[n-1].ID, nil
	}
	return 0, nil
}
