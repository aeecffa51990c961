package memstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Contents returns how many users (service accounts included), groups,
// projects, features, tokens and events the store holds, by those names.
func (s *Store) Contents(ctx context.Context) (map[string]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.w.contents(), nil
}

func (w *world) contents() map[string]int64 {
	return map[string]int64{
		"users": int64(len(w.users)), "groups": int64(len(w.groups)), "projects": int64(len(w.projects)),
		"features": int64(len(w.features)), "tokens": int64(len(w.tokens)), "events": int64(len(w.events)),
	}
}

// Load writes a whole world into the empty store at once: the rows of b
// (as Write does; b.Then must be nil), then every batch of events that
// events passes to emit, each event keeping its ID, which must be positive
// and larger than the one before. Later events continue above the largest.
// On any error the store is left empty, as it was; a store that is not
// empty is refused with ErrConflict.
func (s *Store) Load(ctx context.Context, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loadLocked(ctx, b, events, nil)
}

// loadLocked is Load with the world's lock held. finish, when not nil, runs
// after the last event is stored: an error from it undoes the load as any
// other error does.
func (s *Store) loadLocked(ctx context.Context, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error, finish func() error) error {
	if b.Then != nil {
		return fmt.Errorf("memstore: Load takes a batch without Then")
	}
	var held []string
	for _, k := range []string{"users", "groups", "projects", "features", "tokens", "events"} {
		if n := s.w.contents()[k]; n > 0 {
			held = append(held, nounCount(n, k))
		}
	}
	if len(held) > 0 {
		return conflict("the store is not empty: it holds %s", strings.Join(held, ", "))
	}
	saved := s.w
	work := b.Clone()
	work.Events = nil
	s.w.assignIDs(work)
	if err := s.w.check(work); err != nil {
		return err
	}
	s.w.apply(work, nil)
	// Ids ascend past those of the log's leaves, if its events were pruned.
	last := s.w.nextEventID - 1
	err := events(func(batch []flagadmin.Event) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, e := range batch {
			if e.ID <= last {
				return conflict("event id %d is not above the one before (%d)", e.ID, last)
			}
			last = e.ID
			s.w.nextEventID = e.ID
			if _, err := s.w.appendEvent(e); err != nil {
				return fmt.Errorf("event %d: %w", e.ID, err)
			}
		}
		return nil
	})
	if err == nil && finish != nil {
		err = finish()
	}
	if err != nil {
		s.w = New().w
		s.w.nextUserID, s.w.nextGroupID, s.w.nextEventID = saved.nextUserID, saved.nextGroupID, saved.nextEventID
		s.w.leaves, s.w.tiles = saved.leaves, saved.tiles
		return err
	}
	s.version++
	return nil
}

// nounCount is "1 user", "2 users": n of the plural noun kind.
func nounCount(n int64, kind string) string {
	if n == 1 {
		kind = strings.TrimSuffix(kind, "s")
	}
	return fmt.Sprintf("%d %s", n, kind)
}
