package tlog

import (
	"context"
	"errors"
	"iter"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// StoreSource is the Source of a store read directly ("flagadmin log
// verify --db"): its newest stored checkpoint, its leaves and every event
// (as an admin sees them).
func StoreSource(store flagadmin.Store, log vlog.Store) Source {
	return storeSource{store: store, log: log}
}

type storeSource struct {
	store flagadmin.Store
	log   vlog.Store
}

// errNoCheckpoint: the store holds no checkpoint.
var errNoCheckpoint = errors.New("the database holds no checkpoint: a server signs them when started with --log-key")

func (s storeSource) Checkpoint(ctx context.Context) ([]byte, error) {
	c, err := s.log.LatestCheckpoint(ctx)
	if errors.Is(err, flagadmin.ErrNotFound) {
		return nil, errNoCheckpoint
	}
	return c.Note, err
}

func (s storeSource) Leaves(ctx context.Context, start int64, count int) ([]vlog.Leaf, int64, error) {
	size, err := s.log.LogSize(ctx)
	if err != nil {
		return nil, 0, err
	}
	if start >= size {
		return nil, size, nil
	}
	leaves, err := s.log.LogLeaves(ctx, start, min(start+int64(count), size))
	return leaves, size, err
}

// errStop ends an export the consumer stopped reading.
var errStop = errors.New("stop")

func (s storeSource) Events(ctx context.Context) iter.Seq2[flagadmin.Event, error] {
	return func(yield func(flagadmin.Event, error) bool) {
		err := s.store.ExportEvents(ctx, flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error {
			if !yield(e, nil) {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			yield(flagadmin.Event{}, err)
		}
	}
}
