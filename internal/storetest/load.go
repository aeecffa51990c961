package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// Loader is a store with the bulk load of imports (bunstore and memstore
// have it): a whole world into an empty store, in one transaction, event
// ids kept.
type Loader interface {
	flagadmin.Store
	Contents(ctx context.Context) (map[string]int64, error)
	Load(ctx context.Context, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error
}

// RunLoad is the contract of Loader: ids kept (with gaps) and generated
// ids above them afterwards; all or nothing; a store that is not empty
// refused.
func RunLoad(t *testing.T, newStore func(t *testing.T) Loader) {
	ctx := context.Background()
	at := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	world := func() *flagadmin.Batch {
		uid := int64(40)
		return &flagadmin.Batch{
			Users:    []flagadmin.User{{ID: 40, Name: "Ada", Email: "ada@example.com", RootRole: flagadmin.RoleAdmin}, {ID: 7, Username: "bot", RootRole: flagadmin.RoleEditor, IsService: true}},
			Groups:   []flagadmin.Group{{ID: 9, Name: "Team", Users: []int64{7, 40}}},
			Projects: []flagadmin.Project{{ID: "web", Name: "Web", Mode: flagadmin.ModePrivate, CreatedAt: at, Members: []flagadmin.ProjectMembership{{UserID: &uid, Role: flagadmin.ProjectRoleOwner}}}},
			Features: []flagadmin.Feature{{Name: "checkout", Project: "web", Type: flagadmin.TypeRelease, CreatedAt: at, Lifecycle: flagadmin.Lifecycle{Stage: flagadmin.StageLive}}},
			Tokens:   []flagadmin.APIToken{{SecretHash: flagadmin.HashSecret("user:ada-secret"), Name: "ada", Type: flagadmin.TokenUser, UserID: &uid, CreatedAt: at}},
		}
	}
	events := func(ids ...int64) [][]flagadmin.Event {
		var out [][]flagadmin.Event
		for i, id := range ids {
			project, feature := "web", "checkout"
			e := flagadmin.Event{ID: id, CreatedAt: at.Add(time.Duration(i) * time.Minute), Type: "feature-updated", CreatedBy: "ada@example.com",
				Project: &project, FeatureName: &feature, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
			if i%2 == 0 {
				e.Type = "a-type-of-another-version" // kept as it is
			}
			if len(out) == 0 || len(out[len(out)-1]) == 2 {
				out = append(out, nil)
			}
			out[len(out)-1] = append(out[len(out)-1], e)
		}
		return out
	}
	emitAll := func(batches [][]flagadmin.Event, fail error) func(emit func([]flagadmin.Event) error) error {
		return func(emit func([]flagadmin.Event) error) error {
			for _, b := range batches {
				if err := emit(b); err != nil {
					return err
				}
			}
			return fail
		}
	}
	wantEmpty := func(t *testing.T, s Loader) {
		t.Helper()
		have, err := s.Contents(ctx)
		wantNoError(t, "Contents", err)
		for k, n := range have {
			if n != 0 {
				t.Errorf("the store holds %d %s, want nothing", n, k)
			}
		}
	}

	t.Run("ids kept, generated ids above them", func(t *testing.T) {
		s := newStore(t)
		wantNoError(t, "Load", s.Load(ctx, world(), emitAll(events(3, 5, 1000, 1001, 1500), nil)))
		page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Limit: 10})
		wantNoError(t, "SearchEvents", err)
		var ids []int64
		for _, e := range page.Events {
			ids = append(ids, e.ID)
		}
		if fmt.Sprint(ids) != "[1500 1001 1000 5 3]" || page.Total != 5 || page.Events[0].Type != "a-type-of-another-version" {
			t.Fatalf("events: got ids %v, total %d, first %+v", ids, page.Total, page.Events[0])
		}
		svc := flagadmin.NewService(s)
		p, err := svc.Authenticate(ctx, "user:ada-secret")
		if err != nil || p.User == nil || p.User.ID != 40 {
			t.Errorf("the loaded token: got %+v, %v", p, err)
		}
		wantNoError(t, "CompleteLifecycle", svc.CompleteLifecycle(ctx, flagadmin.System, "web", "checkout", flagadmin.CompleteRequest{Status: "kept"}))
		page, err = s.SearchEvents(ctx, flagadmin.EventQuery{Limit: 1})
		wantNoError(t, "SearchEvents", err)
		if page.Events[0].ID != 1501 {
			t.Errorf("the next event: got id %d, want 1501", page.Events[0].ID)
		}
		u, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Name: "New", RootRole: flagadmin.RoleViewer})
		if err != nil || u.ID != 41 {
			t.Errorf("the next user: got %d, %v; want 41", u.ID, err)
		}
		g, err := svc.CreateGroup(ctx, flagadmin.System, flagadmin.Group{Name: "New"})
		if err != nil || g.ID != 10 {
			t.Errorf("the next group: got %d, %v; want 10", g.ID, err)
		}
		if err := s.Load(ctx, &flagadmin.Batch{}, emitAll(nil, nil)); !errors.Is(err, flagadmin.ErrConflict) {
			t.Errorf("Load into a store that is not empty: got %v, want ErrConflict", err)
		}
	})

	t.Run("a load builds the log's tree, gaps in ids and all", func(t *testing.T) {
		s := newStore(t)
		ls, ok := s.(vlog.Store)
		if !ok {
			t.Skipf("storetest: %T keeps no verifiable log (vlog.Store)", s)
		}
		wantNoError(t, "Load", s.Load(ctx, world(), emitAll(events(3, 5, 1000, 1001, 1500), nil)))
		w := newWorld(t, s)
		hashes := w.wantTreeOfEvents(t, ls, nil)
		wantEqual(t, "leaves", len(hashes), 5)
		wantNoError(t, "CompleteLifecycle", w.svc.CompleteLifecycle(ctx, flagadmin.System, "web", "checkout", flagadmin.CompleteRequest{Status: "kept"}))
		hashes = w.wantTreeOfEvents(t, ls, nil)
		w.wantProofs(t, ls, hashes)
		// A failed load appends nothing.
		s2 := newStore(t)
		ls2 := s2.(vlog.Store)
		if err := s2.Load(ctx, world(), emitAll(events(1, 2, 3), errors.New("the source went away"))); err == nil {
			t.Fatal("Load: got no error")
		}
		size, err := ls2.LogSize(ctx)
		wantNoError(t, "LogSize", err)
		wantEqual(t, "leaves after a failed load", size, int64(0))
	})

	t.Run("a failure part-way leaves the store empty", func(t *testing.T) {
		s := newStore(t)
		boom := errors.New("the source went away")
		if err := s.Load(ctx, world(), emitAll(events(1, 2, 3), boom)); !errors.Is(err, boom) {
			t.Fatalf("Load: got %v, want the events' error", err)
		}
		wantEmpty(t, s)
		// Ids out of order are refused, and leave nothing either.
		if err := s.Load(ctx, world(), emitAll(events(5, 4), nil)); !errors.Is(err, flagadmin.ErrConflict) {
			t.Fatalf("Load with ids out of order: got %v, want ErrConflict", err)
		}
		wantEmpty(t, s)
		// An event whose leaf cannot be computed (data that is not JSON),
		// in a later batch, is refused as invalid, and leaves nothing.
		bad := events(1, 2, 3)
		bad[1][0].Data = json.RawMessage(`{"n":`)
		if err := s.Load(ctx, world(), emitAll(bad, nil)); !errors.Is(err, flagadmin.ErrValidation) {
			t.Fatalf("Load with data that is not JSON: got %v, want ErrValidation", err)
		}
		wantEmpty(t, s)
		// And the store takes a load afterwards.
		wantNoError(t, "Load", s.Load(ctx, world(), emitAll(events(1, 2), nil)))
	})
}
