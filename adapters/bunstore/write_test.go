package bunstore_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestConcurrentWritesAssignDistinctIDs creates users and groups with ID 0
// from many goroutines over several stores (as replicas would): every
// write succeeds and the ids are 1..n.
func TestConcurrentWritesAssignDistinctIDs(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		replicas := []*bunstore.Store{s, open(t, url), open(t, url), open(t, url)}
		const n = 12
		var wg sync.WaitGroup
		var mu sync.Mutex
		var users, groups []int64
		for i := range n {
			wg.Go(func() {
				b := &flagadmin.Batch{
					Users:  []flagadmin.User{{Name: "u", RootRole: flagadmin.RoleViewer}},
					Groups: []flagadmin.Group{{Name: "g"}},
				}
				b.Then = func(b *flagadmin.Batch) ([]flagadmin.Event, error) {
					uid := b.Users[0].ID
					return []flagadmin.Event{{Type: flagadmin.EventUserCreated, CreatedBy: "test", CreatedByUserID: &uid, CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)}}, nil
				}
				if err := replicas[i%len(replicas)].Write(ctx, b); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
				if b.Events[0].ID == 0 {
					t.Errorf("event id not written back")
				}
				mu.Lock()
				users = append(users, b.Users[0].ID)
				groups = append(groups, b.Groups[0].ID)
				mu.Unlock()
			})
		}
		wg.Wait()
		slices.Sort(users)
		slices.Sort(groups)
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(i + 1)
		}
		if !slices.Equal(users, want) || !slices.Equal(groups, want) {
			t.Errorf("ids: got users %v, groups %v; want %v", users, groups, want)
		}
		page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Limit: 100})
		must(t, "SearchEvents", err)
		if page.Total != n {
			t.Errorf("events: got %d, want %d", page.Total, n)
		}
		for _, e := range page.Events {
			if _, err := s.User(ctx, *e.CreatedByUserID); err != nil {
				t.Errorf("event %d names user %d: %v", e.ID, *e.CreatedByUserID, err)
			}
		}
	})
}
