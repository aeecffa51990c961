package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// FollowTestStore is a store that can follow an Unleash database.
type FollowTestStore interface {
	flagadmin.Store
	follow.Target
}

// followSource is the source the cases record.
var followSource = follow.Source{SystemID: "7712561264145193080", Database: "unleash", URL: "postgres://db.example:5432/unleash"}

// followWorld is the world the cases load: two users (one a service
// account), a group, three projects (one private), three features and
// four tokens.
func followWorld() *flagadmin.Batch {
	created := at("2026-01-02T03:04:05.678Z")
	return &flagadmin.Batch{
		Users: []flagadmin.User{
			{ID: 2, Name: "Alice", Email: "alice@example.com", RootRole: flagadmin.RoleAdmin},
			{ID: 3, Name: "Bob", Email: "bob@example.com", RootRole: flagadmin.RoleEditor},
			{ID: 10, Name: "CI", Username: "ci", RootRole: flagadmin.RoleEditor, IsService: true},
		},
		Groups: []flagadmin.Group{{ID: 1, Name: "team", Users: []int64{3}}},
		Projects: []flagadmin.Project{
			{ID: "default", Name: "Default", Mode: flagadmin.ModeOpen, CreatedAt: created},
			{ID: "payments", Name: "Payments", Mode: flagadmin.ModePrivate, CreatedAt: created,
				Members:     []flagadmin.ProjectMembership{{UserID: i64(3), Role: flagadmin.ProjectRoleOwner}, groupMember(1, flagadmin.ProjectRoleMember)},
				FavoritedBy: []int64{3}},
			{ID: "mobile", Name: "Mobile", Mode: flagadmin.ModeProtected, CreatedAt: created},
		},
		Features: []flagadmin.Feature{
			{Name: "checkout", Project: "default", Type: flagadmin.TypeRelease, CreatedAt: created,
				Tags: []flagadmin.Tag{{Type: "simple", Value: "web"}}, Lifecycle: flagadmin.Lifecycle{Stage: flagadmin.StageLive}},
			{Name: "psp", Project: "payments", Type: flagadmin.TypeExperiment, CreatedAt: created, Lifecycle: flagadmin.Lifecycle{Stage: flagadmin.StageInitial}},
			{Name: "dark-mode", Project: "mobile", Type: flagadmin.TypeOperational, CreatedAt: created, Lifecycle: flagadmin.Lifecycle{Stage: flagadmin.StageInitial}},
		},
		Tokens: []flagadmin.APIToken{
			{SecretHash: flagadmin.HashSecret(followAdminSecret), Name: "admin", Type: flagadmin.TokenAdmin, CreatedAt: created},
			{SecretHash: flagadmin.HashSecret(followBobSecret), Name: "bob's PAT", Type: flagadmin.TokenUser, UserID: i64(3), CreatedAt: created},
			{SecretHash: flagadmin.HashSecret(followCISecret), Name: "ci", Type: flagadmin.TokenUser, UserID: i64(10), CreatedAt: created},
			{SecretHash: flagadmin.HashSecret("default:development.backend-secret"), Name: "backend", Type: flagadmin.TokenClient, Project: "default", Environment: "development", CreatedAt: created},
		},
	}
}

// Secrets of followWorld's tokens.
const (
	followAdminSecret = "*:*.follow-admin-secret"
	followBobSecret   = "user:follow-bob-secret"
	followCISecret    = "user:follow-ci-secret"
)

// followEvent is an event of Unleash with its id.
func followEvent(id int64, typ string, project, feature *string) flagadmin.Event {
	e := ev(typ, "admin", i64(-42), "2026-06-15T11:00:00Z", project, feature, nil, fmt.Sprintf(`{"n":%d}`, id))
	e.ID = id
	return e
}

// RunFollow runs the contract cases of follow.Target (the load
// that starts following, batches applied at once with their
// events' own ids, deletes that take what refers to them along, the lease
// and its fencing, and the read-only service). newStore must return a
// new, empty store for each call. Times are made up, so the cases neither
// sleep nor depend on the clock.
func RunFollow(t *testing.T, newStore func(t *testing.T) FollowTestStore) {
	t.Helper()
	t0 := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	lease := 20 * time.Second
	ctx := context.Background()
	acquire := func(t *testing.T, s FollowTestStore, holder string, now time.Time) (follow.State, bool) {
		t.Helper()
		st, ok, err := s.AcquireFollowLease(ctx, holder, now, now.Add(lease))
		wantNoError(t, "AcquireFollowLease", err)
		return st, ok
	}
	state := func(t *testing.T, s FollowTestStore) follow.State {
		t.Helper()
		st, err := s.FollowState(ctx)
		wantNoError(t, "FollowState", err)
		return st
	}
	emitAll := func(events ...flagadmin.Event) func(emit func([]flagadmin.Event) error) error {
		return func(emit func([]flagadmin.Event) error) error {
			for chunk := range slices.Chunk(events, 2) {
				if err := emit(slices.Clone(chunk)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	// loaded returns a store following followSource, loaded with
	// followWorld and events 1, 2, 4 (3 is a hole), at position 4, with
	// holder "a" holding the lease at t0.
	loaded := func(t *testing.T) FollowTestStore {
		t.Helper()
		s := newStore(t)
		if _, ok := acquire(t, s, "a", t0); !ok {
			t.Fatal("AcquireFollowLease on a new store: not acquired")
		}
		st := follow.State{Source: followSource, Position: 4, Holes: 1, SyncedAt: t0}
		err := s.LoadFollow(ctx, "a", t0, st, followWorld(), emitAll(
			followEvent(1, flagadmin.EventProjectCreated, str("default"), nil),
			followEvent(2, flagadmin.EventFeatureCreated, str("default"), str("checkout")),
			followEvent(4, "feature-link-added", str("payments"), str("psp"))))
		wantNoError(t, "LoadFollow", err)
		return s
	}
	eventIDs := func(t *testing.T, s FollowTestStore) []int64 {
		t.Helper()
		var ids []int64
		err := s.ExportEvents(ctx, flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error { ids = append(ids, e.ID); return nil })
		wantNoError(t, "ExportEvents", err)
		return ids
	}
	authenticates := func(t *testing.T, s FollowTestStore, secret string) bool {
		t.Helper()
		_, err := flagadmin.NewService(s, flagadmin.WithClock(func() time.Time { return t0 })).Authenticate(ctx, secret)
		if err != nil && !errors.Is(err, flagadmin.ErrAuthenticationRequired) {
			t.Fatalf("Authenticate: %v", err)
		}
		return err == nil
	}

	cases := []testCase{
		leaseCase("follow/the lease follows flagadmin.Lease's rules with the caller's clock", func(t *testing.T) leaseOf {
			s := newStore(t)
			return leaseOf{
				acquire: func(t *testing.T, holder string, now, until time.Time) (flagadmin.Lease, bool) {
					t.Helper()
					st, ok, err := s.AcquireFollowLease(ctx, holder, now, until)
					wantNoError(t, "AcquireFollowLease", err)
					return st.Lease, ok
				},
				release: func(t *testing.T, holder string) {
					t.Helper()
					wantNoError(t, "ReleaseFollowLease", s.ReleaseFollowLease(ctx, holder))
				},
				read: func(t *testing.T) flagadmin.Lease { return state(t, s).Lease },
			}
		}),
		{"follow/the lease is exclusive, renewed by its holder, taken over once it ends, and released", func(t *testing.T, _ *world) {
			s := newStore(t)
			wantEqual(t, "a new store follows", state(t, s).Following(), false)
			st, ok := acquire(t, s, "a", t0)
			wantEqual(t, "a acquires a new store's lease", ok, true)
			wantEqual(t, "holder", st.Lease.Holder, "a")
			wantEqual(t, "lease until", st.Lease.Until.Equal(t0.Add(lease)), true)
			st, ok = acquire(t, s, "b", t0.Add(time.Second))
			wantEqual(t, "b acquires a's lease", ok, false)
			wantEqual(t, "holder seen by b", st.Lease.Holder, "a")
			_, ok = acquire(t, s, "a", t0.Add(10*time.Second))
			wantEqual(t, "a renews", ok, true)
			_, ok = acquire(t, s, "b", t0.Add(29*time.Second))
			wantEqual(t, "b acquires before the renewed lease ends", ok, false)
			_, ok = acquire(t, s, "b", t0.Add(30*time.Second))
			wantEqual(t, "b acquires when the lease has ended", ok, true)
			wantNoError(t, "ReleaseFollowLease by a non-holder", s.ReleaseFollowLease(ctx, "a"))
			wantEqual(t, "holder after a non-holder released", state(t, s).Lease.Holder, "b")
			wantNoError(t, "ReleaseFollowLease", s.ReleaseFollowLease(ctx, "b"))
			wantEqual(t, "holder after release", state(t, s).Lease.Holder, "")
			_, ok = acquire(t, s, "a", t0.Add(31*time.Second))
			wantEqual(t, "a acquires a released lease at once", ok, true)
		}},
		{"follow/of servers acquiring at once, exactly one holds the lease", func(t *testing.T, _ *world) {
			s := newStore(t)
			won := make(chan string, 8)
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					holder := fmt.Sprintf("server-%d", i)
					if _, ok, err := s.AcquireFollowLease(ctx, holder, t0, t0.Add(lease)); err == nil && ok {
						won <- holder
					}
				}()
			}
			wg.Wait()
			close(won)
			var winners []string
			for h := range won {
				winners = append(winners, h)
			}
			if len(winners) != 1 {
				t.Fatalf("got winners %v, want exactly one", winners)
			}
			wantEqual(t, "holder", state(t, s).Lease.Holder, winners[0])
		}},
		{"follow/LoadFollow writes the world and the events with their ids, and records the source", func(t *testing.T, _ *world) {
			s := loaded(t)
			st := state(t, s)
			wantEqual(t, "following", st.Following(), true)
			wantEqual(t, "source", st.Source, followSource)
			wantEqual(t, "position", st.Position, int64(4))
			wantEqual(t, "holes", st.Holes, int64(1))
			wantEqual(t, "synced at", st.SyncedAt.Equal(t0), true)
			wantEqual(t, "holder", st.Lease.Holder, "a")
			wantEqual(t, "event ids", fmt.Sprint(eventIDs(t, s)), "[1 2 4]")
			page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Limit: 10, Types: []string{"feature-link-added"}})
			wantNoError(t, "SearchEvents", err)
			wantEqual(t, "an event of a type unknown to flagadmin, by type", page.Total, 1)
			u, err := s.User(ctx, 10)
			wantNoError(t, "User", err)
			wantEqual(t, "service account", u.IsService, true)
			access, err := s.ProjectAccess(ctx, 3)
			wantNoError(t, "ProjectAccess", err)
			wantEqual(t, "bob's role in payments", access.Roles["payments"], flagadmin.ProjectRoleOwner)
			wantEqual(t, "the admin token authenticates", authenticates(t, s, followAdminSecret), true)
			wantEqual(t, "bob's PAT authenticates", authenticates(t, s, followBobSecret), true)
		}},
		{"follow/LoadFollow refuses a store that holds anything or follows a source, and a caller without the lease", func(t *testing.T, _ *world) {
			s := newStore(t)
			err := s.LoadFollow(ctx, "a", t0, follow.State{Source: followSource}, followWorld(), emitAll())
			wantKind(t, "LoadFollow without the lease", err, follow.ErrLeaseLost)
			wantEqual(t, "following after a refused load", state(t, s).Following(), false)
			acquire(t, s, "a", t0)
			err = s.LoadFollow(ctx, "a", t0.Add(lease), follow.State{Source: followSource}, followWorld(), emitAll())
			wantKind(t, "LoadFollow with an ended lease", err, follow.ErrLeaseLost)

			// An event source that fails half way: nothing is written.
			failing := func(emit func([]flagadmin.Event) error) error {
				if err := emit([]flagadmin.Event{followEvent(1, flagadmin.EventProjectCreated, str("default"), nil)}); err != nil {
					return err
				}
				return errors.New("the source went away")
			}
			err = s.LoadFollow(ctx, "a", t0, follow.State{Source: followSource, Position: 1}, followWorld(), failing)
			if err == nil {
				t.Fatal("LoadFollow with failing events: got nil, want the error")
			}
			wantEqual(t, "following after a failed load", state(t, s).Following(), false)
			wantEqual(t, "events after a failed load", len(eventIDs(t, s)), 0)
			if _, err := s.User(ctx, 2); !errors.Is(err, flagadmin.ErrNotFound) {
				t.Errorf("User after a failed load: got %v, want ErrNotFound", err)
			}

			full := loaded(t)
			err = full.LoadFollow(ctx, "a", t0, follow.State{Source: followSource}, &flagadmin.Batch{}, emitAll())
			wantKind(t, "LoadFollow on a following store", err, flagadmin.ErrConflict)

			other := newStore(t)
			b := newRows()
			wantNoError(t, "Write", other.Write(ctx, b))
			acquire(t, other, "a", t0)
			err = other.LoadFollow(ctx, "a", t0, follow.State{Source: followSource}, &flagadmin.Batch{}, emitAll())
			wantKind(t, "LoadFollow on a store with rows", err, flagadmin.ErrConflict)
			wantEqual(t, "following after a refused load", state(t, other).Following(), false)
		}},
		{"follow/ApplyFollow changes rows and removes what refers to deleted ones", func(t *testing.T, _ *world) {
			s := loaded(t)
			err := s.ApplyFollow(ctx, "a", t0, &follow.Batch{
				Users: []flagadmin.User{{ID: 2, Name: "Alice", Email: "alice@example.com", RootRole: flagadmin.RoleViewer},
					{ID: 4, Name: "Carol", Email: "carol@example.com", RootRole: flagadmin.RoleEditor}},
				Groups: []flagadmin.Group{{ID: 1, Name: "team-renamed", Users: []int64{4}}},
				Projects: []flagadmin.Project{{ID: "mobile", Name: "Mobile", Mode: flagadmin.ModePrivate, CreatedAt: at("2026-01-02T03:04:05.678Z"),
					ArchivedAt: atp("2026-06-15T11:30:00Z"), Members: []flagadmin.ProjectMembership{{UserID: i64(4), Role: flagadmin.ProjectRoleMember}}}},
				Features: []flagadmin.Feature{
					{Name: "checkout", Project: "mobile", Type: flagadmin.TypeRelease, Stale: true, CreatedAt: at("2026-01-02T03:04:05.678Z"),
						Lifecycle: flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: flagadmin.StatusKept, StatusValue: "v2"}},
					{Name: "new-flag", Project: "default", Type: flagadmin.TypeKillSwitch, CreatedAt: at("2026-06-15T11:00:00Z"),
						Tags: []flagadmin.Tag{{Type: "team", Value: "core"}}, Lifecycle: flagadmin.Lifecycle{Stage: flagadmin.StageInitial}},
				},
				DeleteUsers:    []int64{3},
				DeleteFeatures: []string{"dark-mode"},
				DeleteTokens:   []string{flagadmin.HashSecret(followAdminSecret)},
				Position:       4, Holes: 1,
			})
			wantNoError(t, "ApplyFollow", err)
			u, err := s.User(ctx, 2)
			wantNoError(t, "User 2", err)
			wantEqual(t, "alice's root role", u.RootRole, flagadmin.RoleViewer)
			if _, err := s.User(ctx, 3); !errors.Is(err, flagadmin.ErrNotFound) {
				t.Errorf("deleted user: got %v, want ErrNotFound", err)
			}
			wantEqual(t, "the deleted token authenticates", authenticates(t, s, followAdminSecret), false)
			wantEqual(t, "the deleted user's PAT authenticates", authenticates(t, s, followBobSecret), false)
			wantEqual(t, "another PAT authenticates", authenticates(t, s, followCISecret), true)
			g, err := s.Group(ctx, 1)
			wantNoError(t, "Group", err)
			wantEqual(t, "group name", g.Name, "team-renamed")
			wantEqual(t, "group users", fmt.Sprint(g.Users), "[4]")
			access, err := s.ProjectAccess(ctx, 4)
			wantNoError(t, "ProjectAccess", err)
			wantEqual(t, "carol's roles", fmt.Sprint(access.Roles), "map[mobile:Member payments:Member]")
			p, err := s.Project(ctx, "mobile")
			wantNoError(t, "Project", err)
			wantEqual(t, "mode", p.Mode, flagadmin.ModePrivate)
			wantTime(t, "archivedAt", p.ArchivedAt, atp("2026-06-15T11:30:00Z"))
			f, err := s.Feature(ctx, "checkout")
			wantNoError(t, "Feature", err)
			wantEqual(t, "moved feature's project", f.Project, "mobile")
			wantEqual(t, "stale", f.Stale, true)
			wantEqual(t, "lifecycle", f.Lifecycle, flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: flagadmin.StatusKept, StatusValue: "v2"})
			wantEqual(t, "tags replaced", len(f.Tags), 0)
			f, err = s.Feature(ctx, "new-flag")
			wantNoError(t, "new Feature", err)
			wantEqual(t, "new feature's tag", fmt.Sprint(f.Tags), "[{core team}]")
			if _, err := s.Feature(ctx, "dark-mode"); !errors.Is(err, flagadmin.ErrNotFound) {
				t.Errorf("deleted feature: got %v, want ErrNotFound", err)
			}
			stats, err := s.ProjectStats(ctx, flagadmin.ProjectStatsQuery{FavoritesOf: i64(3)})
			wantNoError(t, "ProjectStats", err)
			for _, st := range stats {
				if st.Project.ID == "payments" {
					wantEqual(t, "payments members after bob was deleted (the group's carol)", st.MemberCount, 1)
					wantEqual(t, "the deleted user's favorite", st.Favorite, false)
				}
			}

			// Deleting a group and a project takes their roles and features along.
			err = s.ApplyFollow(ctx, "a", t0, &follow.Batch{DeleteGroups: []int64{1}, DeleteProjects: []string{"payments"}, Position: 4, Holes: 1})
			wantNoError(t, "ApplyFollow deletes", err)
			access, err = s.ProjectAccess(ctx, 4)
			wantNoError(t, "ProjectAccess", err)
			wantEqual(t, "carol's roles after the group went", fmt.Sprint(access.Roles), "map[mobile:Member]")
			if _, err := s.Feature(ctx, "psp"); !errors.Is(err, flagadmin.ErrNotFound) {
				t.Errorf("feature of a deleted project: got %v, want ErrNotFound", err)
			}
			if _, err := s.Project(ctx, "payments"); !errors.Is(err, flagadmin.ErrNotFound) {
				t.Errorf("deleted project: got %v, want ErrNotFound", err)
			}
		}},
		{"follow/ApplyFollow records events with their ids after the position, and moves it", func(t *testing.T, _ *world) {
			s := loaded(t)
			vs, versioned := s.(flagadmin.VersionedStore)
			var before int64
			if versioned {
				var err error
				before, err = vs.Version(ctx)
				wantNoError(t, "Version", err)
			}
			synced := t0.Add(3 * time.Second)
			err := s.ApplyFollow(ctx, "a", t0, &follow.Batch{
				Events:   []flagadmin.Event{followEvent(5, flagadmin.EventFeatureArchived, str("default"), str("checkout")), followEvent(8, "release-plan-added", nil, nil)},
				Position: 9, Holes: 3, SyncedAt: synced,
			})
			wantNoError(t, "ApplyFollow", err)
			wantEqual(t, "event ids", fmt.Sprint(eventIDs(t, s)), "[1 2 4 5 8]")
			st := state(t, s)
			wantEqual(t, "position", st.Position, int64(9))
			wantEqual(t, "holes", st.Holes, int64(3))
			wantEqual(t, "synced at", st.SyncedAt.Equal(synced), true)
			var after []int64
			err = s.ExportEvents(ctx, flagadmin.EventQuery{}, 4, func(e flagadmin.Event) error { after = append(after, e.ID); return nil })
			wantNoError(t, "ExportEvents after 4", err)
			wantEqual(t, "events after 4", fmt.Sprint(after), "[5 8]")
			page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Limit: 1, IDs: []int64{5}})
			wantNoError(t, "SearchEvents", err)
			if page.Total != 1 {
				t.Fatalf("SearchEvents id 5: total %d, want 1", page.Total)
			}
			wantJSON(t, "event 5's data", page.Events[0].Data, `{"n":5}`)
			wantEqual(t, "event 5's feature", fmtPtr(page.Events[0].FeatureName), "checkout")
			if ls, ok := s.(vlog.Store); ok {
				// Followed events are leaves of the verifiable log like any other.
				(&world{t: t, ctx: ctx, store: s}).wantTreeOfEvents(t, ls, nil)
			}
			if versioned {
				v, err := vs.Version(ctx)
				wantNoError(t, "Version", err)
				if v <= before {
					t.Errorf("Version after events: got %d, want above %d", v, before)
				}
				before = v
			}

			// Only the position and the synced time: nothing a read answers changes.
			err = s.ApplyFollow(ctx, "a", t0, &follow.Batch{Position: 12, Holes: 6, SyncedAt: synced.Add(time.Second)})
			wantNoError(t, "ApplyFollow of the position alone", err)
			wantEqual(t, "position", state(t, s).Position, int64(12))
			if versioned {
				v, err := vs.Version(ctx)
				wantNoError(t, "Version", err)
				wantEqual(t, "Version after a batch of the position alone", v, before)
			}
		}},
		{"follow/ApplyFollow refuses a batch without the lease, out of order, or with a broken reference, and writes nothing", func(t *testing.T, _ *world) {
			s := loaded(t)
			type refusal struct {
				what   string
				holder string
				now    time.Time
				b      follow.Batch
				kind   error
			}
			refused := []refusal{
				{"another holder", "b", t0, follow.Batch{Position: 5, Holes: 1}, follow.ErrLeaseLost},
				{"an ended lease", "a", t0.Add(lease), follow.Batch{Position: 5, Holes: 1}, follow.ErrLeaseLost},
				{"a position below the current one", "a", t0, follow.Batch{Position: 3, Holes: 1}, flagadmin.ErrConflict},
				{"fewer holes", "a", t0, follow.Batch{Position: 4}, flagadmin.ErrConflict},
				{"an event at the position", "a", t0, follow.Batch{Events: []flagadmin.Event{followEvent(4, "x-y", nil, nil)}, Position: 5, Holes: 1}, flagadmin.ErrConflict},
				{"an event above the batch's position", "a", t0, follow.Batch{Events: []flagadmin.Event{followEvent(6, "x-y", nil, nil)}, Position: 5, Holes: 1}, flagadmin.ErrConflict},
				{"events out of order", "a", t0, follow.Batch{Events: []flagadmin.Event{followEvent(7, "x-y", nil, nil), followEvent(6, "x-y", nil, nil)}, Position: 7, Holes: 1}, flagadmin.ErrConflict},
				{"a feature of a missing project", "a", t0, follow.Batch{Features: []flagadmin.Feature{{Name: "x", Project: "nope", Type: flagadmin.TypeRelease, CreatedAt: t0}},
					Events: []flagadmin.Event{followEvent(5, "x-y", nil, nil)}, Position: 5, Holes: 1}, flagadmin.ErrConflict},
				{"a token of a user the batch deletes", "a", t0, follow.Batch{DeleteUsers: []int64{10},
					Tokens: []flagadmin.APIToken{{SecretHash: flagadmin.HashSecret("user:another"), Name: "x", Type: flagadmin.TokenUser, UserID: i64(10), CreatedAt: t0}}, Position: 5, Holes: 1}, flagadmin.ErrConflict},
				{"a member that does not exist", "a", t0, follow.Batch{Projects: []flagadmin.Project{{ID: "default", Name: "Default", Mode: flagadmin.ModeOpen, CreatedAt: t0,
					Members: []flagadmin.ProjectMembership{{UserID: i64(99), Role: flagadmin.ProjectRoleOwner}}}}, Position: 5, Holes: 1}, flagadmin.ErrConflict},
			}
			// An event whose leaf cannot be computed (data that is not
			// JSON), alone and in a batch large enough to be checked while
			// it is written, is refused as invalid.
			for _, n := range []int{1, 600} {
				var b follow.Batch
				for id := int64(5); id < 5+int64(n); id++ {
					b.Events = append(b.Events, followEvent(id, "x-y", nil, nil))
				}
				b.Events[n*2/3].Data = json.RawMessage(`{"n":`)
				b.Position, b.Holes = b.Events[n-1].ID, 1
				refused = append(refused, refusal{fmt.Sprintf("data that is not JSON among %d events", n), "a", t0, b, flagadmin.ErrValidation})
			}
			for _, r := range refused {
				b := r.b
				wantKind(t, r.what, s.ApplyFollow(ctx, r.holder, r.now, &b), r.kind)
			}
			st := state(t, s)
			wantEqual(t, "position after refused batches", st.Position, int64(4))
			wantEqual(t, "holes after refused batches", st.Holes, int64(1))
			wantEqual(t, "event ids after refused batches", fmt.Sprint(eventIDs(t, s)), "[1 2 4]")
			if _, err := s.User(ctx, 10); err != nil {
				t.Errorf("user of a refused delete: got %v, want it kept", err)
			}
			if _, err := s.Feature(ctx, "x"); !errors.Is(err, flagadmin.ErrNotFound) {
				t.Errorf("feature of a refused batch: got %v, want ErrNotFound", err)
			}

			fresh := newStore(t)
			acquire(t, fresh, "a", t0)
			wantKind(t, "ApplyFollow on a store that follows nothing", fresh.ApplyFollow(ctx, "a", t0, &follow.Batch{Position: 1}), flagadmin.ErrConflict)
		}},
		{"follow/the project list's figures and the event totals follow the batches", func(t *testing.T, _ *world) {
			s := loaded(t)
			// figures is each project's features/stale/members/last seen.
			figures := func(t *testing.T) string {
				t.Helper()
				stats, err := s.ProjectStats(ctx, flagadmin.ProjectStatsQuery{})
				wantNoError(t, "ProjectStats", err)
				slices.SortFunc(stats, func(a, b flagadmin.ProjectStats) int { return strings.Compare(a.Project.ID, b.Project.ID) })
				var out []string
				for _, st := range stats {
					out = append(out, fmt.Sprintf("%s:%d/%d/%d/%s", st.Project.ID, st.FeatureCount, st.StaleCount, st.MemberCount, fmtPtr(st.LastReportedFlagUsage)))
				}
				return strings.Join(out, " ")
			}
			total := func(t *testing.T, q flagadmin.EventQuery) int {
				t.Helper()
				q.Limit = 1
				page, err := s.SearchEvents(ctx, q)
				wantNoError(t, "SearchEvents", err)
				return page.Total
			}
			wantEqual(t, "figures after the load", figures(t), "default:1/0/0/null mobile:1/0/0/null payments:1/0/1/null")
			seen := at("2026-06-15T11:45:00Z")
			err := s.ApplyFollow(ctx, "a", t0, &follow.Batch{
				Users:  []flagadmin.User{{ID: 4, Name: "Carol", Email: "carol@example.com", RootRole: flagadmin.RoleEditor}},
				Groups: []flagadmin.Group{{ID: 1, Name: "team", Users: []int64{3, 4}}},
				Features: []flagadmin.Feature{
					{Name: "checkout", Project: "mobile", Type: flagadmin.TypeRelease, Stale: true, CreatedAt: at("2026-01-02T03:04:05.678Z"), LastSeenAt: &seen},
					{Name: "new-flag", Project: "default", Type: flagadmin.TypeKillSwitch, CreatedAt: at("2026-06-15T11:00:00Z")},
				},
				DeleteFeatures: []string{"dark-mode"},
				Events: []flagadmin.Event{followEvent(5, flagadmin.EventFeatureCreated, str("default"), str("new-flag")),
					followEvent(6, flagadmin.EventFeatureStaleOn, str("mobile"), str("checkout"))},
				Position: 6, Holes: 1,
			})
			wantNoError(t, "ApplyFollow", err)
			wantEqual(t, "figures after moving, adding and deleting features and a group's new user", figures(t),
				"default:1/0/0/null mobile:1/1/0/2026-06-15 11:45:00 +0000 UTC payments:1/0/2/null")
			wantEqual(t, "events of default", total(t, flagadmin.EventQuery{Projects: []string{"default"}}), 3)
			wantEqual(t, "feature-created events", total(t, flagadmin.EventQuery{Types: []string{flagadmin.EventFeatureCreated}}), 2)
			wantEqual(t, "events", total(t, flagadmin.EventQuery{}), 5)

			err = s.ApplyFollow(ctx, "a", t0, &follow.Batch{DeleteUsers: []int64{3}, Position: 6, Holes: 1})
			wantNoError(t, "ApplyFollow of a user's deletion", err)
			wantEqual(t, "figures after a member was deleted", figures(t),
				"default:1/0/0/null mobile:1/1/0/2026-06-15 11:45:00 +0000 UTC payments:1/0/1/null")

			w := followWorld()
			err = s.ApplyFollow(ctx, "a", t0, &follow.Batch{Full: true, Users: w.Users, Groups: w.Groups, Projects: w.Projects,
				Features: w.Features, Tokens: w.Tokens, Position: 6, Holes: 1})
			wantNoError(t, "ApplyFollow Full", err)
			wantEqual(t, "figures after a Full batch of the loaded world", figures(t), "default:1/0/0/null mobile:1/0/0/null payments:1/0/1/null")
			wantEqual(t, "events after a Full batch", total(t, flagadmin.EventQuery{}), 5)
		}},
		{"follow/a Full batch replaces the whole world", func(t *testing.T, _ *world) {
			s := loaded(t)
			w := followWorld()
			err := s.ApplyFollow(ctx, "a", t0, &follow.Batch{Full: true,
				Users:    w.Users[:1],
				Projects: w.Projects[:1],
				Features: w.Features[:1],
				Tokens:   w.Tokens[:1],
				Position: 4, Holes: 1})
			wantNoError(t, "ApplyFollow Full", err)
			users, err := s.Users(ctx)
			wantNoError(t, "Users", err)
			wantEqual(t, "users", len(users), 1)
			tokens, err := s.Tokens(ctx)
			wantNoError(t, "Tokens", err)
			wantEqual(t, "tokens", len(tokens), 1)
			if _, err := s.Group(ctx, 1); !errors.Is(err, flagadmin.ErrNotFound) {
				t.Errorf("group not in a Full batch: got %v, want ErrNotFound", err)
			}
			if _, err := s.Project(ctx, "payments"); !errors.Is(err, flagadmin.ErrNotFound) {
				t.Errorf("project not in a Full batch: got %v, want ErrNotFound", err)
			}
			if _, err := s.Feature(ctx, "checkout"); err != nil {
				t.Errorf("feature in a Full batch: got %v, want it", err)
			}
			wantEqual(t, "events are kept", fmt.Sprint(eventIDs(t, s)), "[1 2 4]")
		}},
		{"follow/the service refuses every write to a following store, naming the source, and reads on", func(t *testing.T, _ *world) {
			s := loaded(t)
			svc := flagadmin.NewService(s, flagadmin.WithClock(func() time.Time { return t0 }))
			wantReadOnly := func(what string, err error) {
				t.Helper()
				var ro *flagadmin.ReadOnlyError
				if !errors.Is(err, flagadmin.ErrReadOnly) || !errors.As(err, &ro) {
					t.Errorf("%s: got %v, want a *ReadOnlyError", what, err)
					return
				}
				wantEqual(t, what+": source", ro.Source, followSource.URL)
			}
			wantReadOnly("CompleteLifecycle", svc.CompleteLifecycle(ctx, flagadmin.System, "default", "checkout", flagadmin.CompleteRequest{Status: flagadmin.StatusKept}))
			wantReadOnly("DeleteServiceAccount", svc.DeleteServiceAccount(ctx, flagadmin.System, "10"))
			_, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Name: "Eve", Email: "eve@example.com", RootRole: flagadmin.RoleViewer})
			wantReadOnly("CreateUser", err)
			_, _, err = svc.CreateAPIToken(ctx, flagadmin.System, flagadmin.NewAPIToken{Type: flagadmin.TokenAdmin})
			wantReadOnly("CreateAPIToken", err)
			_, err = svc.RevokeAPIToken(ctx, flagadmin.System, followAdminSecret)
			wantReadOnly("RevokeAPIToken", err)
			wantReadOnly("CheckWritable", svc.CheckWritable(ctx))
			created, err := svc.ImportAdminToken(ctx, followAdminSecret, "admin")
			wantNoError(t, "ImportAdminToken of a token the copy holds (no write)", err)
			wantEqual(t, "created", created, false)

			f, err := s.Feature(ctx, "checkout")
			wantNoError(t, "Feature", err)
			wantEqual(t, "stage after a refused completion", f.Lifecycle.Stage, flagadmin.StageLive)
			page, err := svc.SearchEvents(ctx, flagadmin.System, flagadmin.EventSearchParams{})
			wantNoError(t, "SearchEvents", err)
			wantEqual(t, "events", page.Total, 3)
			if _, err := svc.ListProjects(ctx, flagadmin.System, flagadmin.ProjectListOptions{}); err != nil {
				t.Errorf("ListProjects: %v", err)
			}
			wantEqual(t, "CheckWritable on a store that follows nothing", flagadmin.NewService(newStore(t)).CheckWritable(ctx), error(nil))
		}},
	}
	n := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { n++; c.run(t, nil) })
	}
	fmt.Printf("storetest: %s ran %d cases\n", t.Name(), n)
}
