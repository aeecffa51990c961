package bunstore

import (
	"context"
	"time"
)

// On a SQLite file the write-ahead log is copied back into the database
// (checkpointed) by a goroutine of the store's, never by a write. SQLite's
// own automatic checkpoint runs inside the commit that takes the log past
// 1000 pages, fsync of the database file included, while that commit holds
// the one writer connection: every other write waits for it, for seconds
// on a busy disk (measured while pruning a million-event store,
// BENCHMARKS.md). So the writer connection's automatic checkpoint is off
// (wal_autocheckpoint 0), and every walCheckpointEvery a passive
// checkpoint runs on a reader connection: it copies what no reader still
// needs and takes no lock a writer waits for. Load, which writes a whole
// store in one transaction, checkpoints on its own connection as it ends
// (load.go), so that the first writes after it do not share the disk with
// the copy of a whole store.

// walCheckpointEvery is how often the checkpointer copies the log back.
const walCheckpointEvery = 250 * time.Millisecond

// walCheckpointSQL copies back the frames of the log no reader needs
// (busy, the log's frames, those copied).
const walCheckpointSQL = "PRAGMA wal_checkpoint(PASSIVE)"

// startCheckpoints starts the store's checkpointer; Close stops it.
func (s *Store) startCheckpoints() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.stopCheckpoints = func() { cancel(); <-done }
	go func() {
		defer close(done)
		t := time.NewTicker(walCheckpointEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := s.checkpointWAL(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("bunstore: cannot checkpoint the write-ahead log", "err", err)
			}
		}
	}()
}

// checkpointWAL runs one passive checkpoint on a reader connection.
func (s *Store) checkpointWAL(ctx context.Context) error {
	var busy, frames, copied int64
	return s.rdb.QueryRowContext(ctx, walCheckpointSQL).Scan(&busy, &frames, &copied)
}
