package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// errCallback is returned by the callbacks of the store cases.
var errCallback = errors.New("storetest: callback refused")

// newRows returns a batch of rows that do not exist in lifecycleFixture: a
// user (id 0, so one the store assigns), a project "fresh", a token and an event.
func newRows() *flagadmin.Batch {
	return &flagadmin.Batch{
		Users:    []flagadmin.User{{Name: "Newcomer", Email: "new@example.com", RootRole: flagadmin.RoleViewer}},
		Projects: []flagadmin.Project{{ID: "fresh", Name: "Fresh", Mode: flagadmin.ModeOpen, CreatedAt: suiteNow}},
		Tokens:   []flagadmin.APIToken{{SecretHash: flagadmin.HashSecret("*:*.fresh-secret"), Name: "fresh", Type: flagadmin.TokenAdmin, CreatedAt: suiteNow}},
		Events:   []flagadmin.Event{ev(flagadmin.EventProjectCreated, "system", nil, "2026-06-15T12:00:00Z", str("fresh"), nil, nil, `{"id": "fresh"}`)},
	}
}

// wantNoNewRows checks that nothing of newRows is stored and no event exists.
func (w *world) wantNoNewRows(t *testing.T) {
	t.Helper()
	_, err := w.store.User(w.ctx, deployID+1)
	wantKind(t, "Store.User of the batch's user", err, flagadmin.ErrNotFound)
	_, err = w.store.Project(w.ctx, "fresh")
	wantKind(t, "Store.Project(fresh)", err, flagadmin.ErrNotFound)
	_, _, err = w.store.LookupToken(w.ctx, flagadmin.HashSecret("*:*.fresh-secret"))
	wantKind(t, "Store.LookupToken of the batch's token", err, flagadmin.ErrNotFound)
	if n := len(w.allEvents()); n != 0 {
		t.Errorf("got %d events, want none", n)
	}
}

func storeCases() []testCase {
	conflicts := []struct {
		name string
		add  func(b *flagadmin.Batch)
	}{
		{"a duplicate feature", func(b *flagadmin.Batch) {
			b.Features = []flagadmin.Feature{{Name: "alpha", Project: "fresh", Type: flagadmin.TypeRelease, CreatedAt: suiteNow, Lifecycle: initial}}
		}},
		{"a duplicate project", func(b *flagadmin.Batch) {
			b.Projects = append(b.Projects, flagadmin.Project{ID: "default", Name: "Again", Mode: flagadmin.ModeOpen, CreatedAt: suiteNow})
		}},
		{"a duplicate user id", func(b *flagadmin.Batch) {
			b.Users = append(b.Users, flagadmin.User{ID: eveID, Name: "Eve again", RootRole: flagadmin.RoleViewer})
		}},
		{"a duplicate token", func(b *flagadmin.Batch) {
			b.Tokens = append(b.Tokens, flagadmin.APIToken{SecretHash: flagadmin.HashSecret(adminSecret), Name: "again", Type: flagadmin.TokenAdmin, CreatedAt: suiteNow})
		}},
		{"a feature of a missing project", func(b *flagadmin.Batch) {
			b.Features = []flagadmin.Feature{{Name: "orphan", Project: "nope", Type: flagadmin.TypeRelease, CreatedAt: suiteNow, Lifecycle: initial}}
		}},
		{"a member of a missing project", func(b *flagadmin.Batch) {
			b.ProjectMembers = []flagadmin.ProjectMember{{ProjectID: "nope", ProjectMembership: userMember(eveID, flagadmin.ProjectRoleMember)}}
		}},
		{"a group member that is no user", func(b *flagadmin.Batch) {
			b.GroupMembers = []flagadmin.GroupMember{{GroupID: platformGroupID, UserID: 99}}
		}},
	}
	var cases []testCase
	for _, c := range conflicts {
		cases = append(cases, testCase{"store/Write is atomic on " + c.name, func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			b := newRows()
			c.add(b)
			wantKind(t, "Store.Write", w.store.Write(w.ctx, b), flagadmin.ErrConflict)
			w.wantNoNewRows(t)
			f := w.feature(t, "alpha")
			wantEqual(t, "alpha's project", f.Project, "default")
			g, err := w.store.Group(w.ctx, platformGroupID)
			wantNoError(t, "Store.Group", err)
			wantEqual(t, "Platform users", fmt.Sprint(g.Users), fmt.Sprint([]int64{gusID}))
		}})
	}
	for _, c := range conflicts {
		cases = append(cases, testCase{"store/Write leaves the batch as it was on " + c.name, func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			b := newRows()
			b.Groups = []flagadmin.Group{{Name: "Newgroup"}}
			c.add(b)
			before := batchIDs(b)
			wantKind(t, "Store.Write", w.store.Write(w.ctx, b), flagadmin.ErrConflict)
			wantEqual(t, "the batch's ids after the failed write", batchIDs(b), before)
		}})
	}
	cases = append(cases,
		testCase{"store/Write leaves the batch as it was when Then fails", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			b := newRows()
			b.Groups = []flagadmin.Group{{Name: "Newgroup"}}
			var seen string
			b.Then = func(b *flagadmin.Batch) ([]flagadmin.Event, error) {
				seen = batchIDs(b)
				return []flagadmin.Event{ev(flagadmin.EventGroupCreated, "system", nil, "2026-06-15T12:00:00Z", nil, nil, nil, "")}, errCallback
			}
			before := batchIDs(b)
			if err := w.store.Write(w.ctx, b); !errors.Is(err, errCallback) {
				t.Errorf("Store.Write: got error %v, want the callback's error", err)
			}
			if seen == before {
				t.Errorf("ids seen by Then: got %s, want the user and group ids assigned", seen)
			}
			wantEqual(t, "the batch's ids after the failed write", batchIDs(b), before)
		}},
		testCase{"store/Write keeps given ids and assigns larger ones after them", func(t *testing.T, w *world) {
			w.load(accounts())
			given := &flagadmin.Batch{
				Users:  []flagadmin.User{{ID: 500, Name: "Given", RootRole: flagadmin.RoleViewer}},
				Groups: []flagadmin.Group{{ID: 70, Name: "Given group"}},
			}
			wantNoError(t, "Store.Write with given ids", w.store.Write(w.ctx, given))
			wantEqual(t, "given ids kept", batchIDs(given), "users [500] groups [70] events []")
			b := &flagadmin.Batch{
				Users:  []flagadmin.User{{Name: "After", RootRole: flagadmin.RoleViewer}},
				Groups: []flagadmin.Group{{Name: "After group"}},
			}
			wantNoError(t, "Store.Write", w.store.Write(w.ctx, b))
			if b.Users[0].ID <= 500 || b.Groups[0].ID <= 70 {
				t.Errorf("assigned ids: got user %d and group %d, want above the given 500 and 70", b.Users[0].ID, b.Groups[0].ID)
			}
			u, err := w.store.User(w.ctx, b.Users[0].ID)
			wantNoError(t, "Store.User of the assigned id", err)
			wantEqual(t, "user of the assigned id", u.Name, "After")
		}},
		testCase{"store/Write does not assign the id of a deleted user again", func(t *testing.T, w *world) {
			w.load(accounts())
			b := &flagadmin.Batch{Users: []flagadmin.User{{Name: "Short-lived", RootRole: flagadmin.RoleViewer}}}
			wantNoError(t, "Store.Write", w.store.Write(w.ctx, b))
			gone := b.Users[0].ID
			wantNoError(t, "Store.DeleteUser", w.store.DeleteUser(w.ctx, gone, func(u flagadmin.User) (flagadmin.Event, error) {
				return ev(flagadmin.EventUserDeleted, "system", nil, "2026-06-15T12:00:00Z", nil, nil, nil, ""), nil
			}))
			b = &flagadmin.Batch{Users: []flagadmin.User{{Name: "Next", RootRole: flagadmin.RoleViewer}}}
			wantNoError(t, "Store.Write", w.store.Write(w.ctx, b))
			if b.Users[0].ID <= gone {
				t.Errorf("id after deleting user %d: got %d, want a larger one", gone, b.Users[0].ID)
			}
		}},
		testCase{"store/Write stores nothing when Then fails", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			b := newRows()
			b.Then = func(*flagadmin.Batch) ([]flagadmin.Event, error) { return nil, errCallback }
			err := w.store.Write(w.ctx, b)
			if !errors.Is(err, errCallback) {
				t.Errorf("Store.Write: got error %v, want the callback's error", err)
			}
			w.wantNoNewRows(t)
		}},
		testCase{"store/Write assigns the next free ids and event ids", func(t *testing.T, w *world) {
			w.load(accounts())
			var seen []int64
			b := &flagadmin.Batch{
				Users:  []flagadmin.User{{Name: "First", RootRole: flagadmin.RoleViewer}, {Name: "Second", RootRole: flagadmin.RoleViewer, IsService: true}},
				Groups: []flagadmin.Group{{Name: "Newgroup", Users: []int64{eveID}}},
				Events: []flagadmin.Event{
					ev(flagadmin.EventUserCreated, "system", nil, "2026-06-15T12:00:00Z", nil, nil, nil, ""),
					ev(flagadmin.EventUserCreated, "system", nil, "2026-06-15T12:00:00Z", nil, nil, nil, ""),
				},
				Then: func(b *flagadmin.Batch) ([]flagadmin.Event, error) {
					seen = []int64{b.Users[0].ID, b.Users[1].ID, b.Groups[0].ID}
					e := ev(flagadmin.EventGroupCreated, "system", nil, "2026-06-15T12:00:00Z", nil, nil, nil, "")
					e.Data = json.RawMessage(fmt.Sprintf(`{"id": %d}`, b.Groups[0].ID))
					return []flagadmin.Event{e}, nil
				},
			}
			wantNoError(t, "Store.Write", w.store.Write(w.ctx, b))
			wantEqual(t, "ids seen by Then", fmt.Sprint(seen), "[12 13 3]")
			wantEqual(t, "user ids written back", fmt.Sprint(b.Users[0].ID, b.Users[1].ID), "12 13")
			wantEqual(t, "group id written back", b.Groups[0].ID, int64(3))
			u, err := w.store.User(w.ctx, 13)
			wantNoError(t, "Store.User(13)", err)
			wantEqual(t, "user 13", u.Name, "Second")
			wantEqual(t, "user 13 is a service account", u.IsService, true)
			g, err := w.store.Group(w.ctx, 3)
			wantNoError(t, "Store.Group(3)", err)
			wantEqual(t, "group 3", g.Name, "Newgroup")
			all := w.allEvents()
			if len(b.Events) != 3 || len(all) != 3 {
				t.Fatalf("got %d batch events and %d stored, want 3 and 3", len(b.Events), len(all))
			}
			for i := range all {
				wantEqual(t, fmt.Sprintf("event %d id", i), b.Events[i].ID, all[i].ID)
				if i > 0 && all[i].ID <= all[i-1].ID {
					t.Errorf("event %d: got id %d after %d, want increasing ids", i, all[i].ID, all[i-1].ID)
				}
			}
			wantJSON(t, "Then's event data", all[2].Data, `{"id": 3}`)
		}},
		testCase{"store/event ids increase in insertion order", func(t *testing.T, w *world) {
			w.load(accounts())
			var ids []int64
			for i := range 10 {
				e := ev(flagadmin.EventFeatureUpdated, "system", nil, "2025-01-01T00:00:00Z", str("default"), nil, nil, "")
				e.CreatedAt = at("2025-01-10T00:00:00Z").Add(-time.Duration(i) * time.Hour)
				stored, err := w.svc.AppendEvent(w.ctx, e)
				wantNoError(t, "AppendEvent", err)
				if len(ids) > 0 && stored.ID <= ids[len(ids)-1] {
					t.Errorf("append %d: got id %d after %d, want a larger id", i, stored.ID, ids[len(ids)-1])
				}
				ids = append(ids, stored.ID)
			}
			page := w.search(t, w.as(adminSecret), params{})
			var got []int64
			for _, e := range page.Events {
				got = append(got, e.ID)
			}
			wantEqual(t, "search order (newest first = first appended)", fmt.Sprint(got), fmt.Sprint(ids))
		}},
		testCase{"store/UpdateFeature saves the mutable fields with the event", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			seen := time.Date(2026, 6, 14, 1, 2, 3, 4e6, time.UTC)
			err := w.store.UpdateFeature(w.ctx, "alpha", func(f *flagadmin.Feature) (*flagadmin.Event, error) {
				f.Stale, f.Type, f.LastSeenAt, f.ArchivedAt = true, flagadmin.TypeOperational, &seen, &seen
				f.Lifecycle = flagadmin.Lifecycle{Stage: flagadmin.StageLive}
				f.Tags = []flagadmin.Tag{{Type: "simple", Value: "changed"}}
				e := ev(flagadmin.EventFeatureStaleOn, "system", nil, "2026-06-15T12:00:00Z", str("default"), str("alpha"), nil, `{"stale": true}`)
				return &e, nil
			})
			wantNoError(t, "Store.UpdateFeature", err)
			f := w.feature(t, "alpha")
			wantEqual(t, "stale", f.Stale, true)
			wantEqual(t, "type", f.Type, flagadmin.TypeOperational)
			wantTime(t, "lastSeenAt", f.LastSeenAt, &seen)
			wantTime(t, "archivedAt", f.ArchivedAt, &seen)
			wantEqual(t, "lifecycle", f.Lifecycle, flagadmin.Lifecycle{Stage: flagadmin.StageLive})
			wantEqual(t, "tags (not saved)", fmt.Sprint(f.Tags), "[{checkout simple #FFFFFF} {payments team}]")
			wantEqual(t, "project", f.Project, "default")
			if events := w.eventsOfType(flagadmin.EventFeatureStaleOn); len(events) != 1 {
				t.Errorf("got %d feature-stale-on events, want 1", len(events))
			}
		}},
		testCase{"store/UpdateFeature writes nothing when the callback fails", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			err := w.store.UpdateFeature(w.ctx, "alpha", func(f *flagadmin.Feature) (*flagadmin.Event, error) {
				f.Stale, f.Lifecycle = true, completed(flagadmin.StatusKept, "x")
				e := ev(flagadmin.EventFeatureStaleOn, "system", nil, "2026-06-15T12:00:00Z", nil, nil, nil, "")
				return &e, errCallback
			})
			if !errors.Is(err, errCallback) {
				t.Errorf("Store.UpdateFeature: got error %v, want the callback's error", err)
			}
			f := w.feature(t, "alpha")
			wantEqual(t, "stale", f.Stale, false)
			wantEqual(t, "lifecycle", f.Lifecycle, initial)
			if n := len(w.allEvents()); n != 0 {
				t.Errorf("got %d events, want none", n)
			}
		}},
		testCase{"store/UpdateFeature writes nothing without an event", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			err := w.store.UpdateFeature(w.ctx, "alpha", func(f *flagadmin.Feature) (*flagadmin.Event, error) {
				f.Stale, f.Lifecycle = true, completed(flagadmin.StatusKept, "x")
				return nil, nil
			})
			wantNoError(t, "Store.UpdateFeature", err)
			f := w.feature(t, "alpha")
			wantEqual(t, "stale", f.Stale, false)
			wantEqual(t, "lifecycle", f.Lifecycle, initial)
			if n := len(w.allEvents()); n != 0 {
				t.Errorf("got %d events, want none", n)
			}
		}},
		testCase{"store/UpdateFeature of a missing feature is not found", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			called := false
			err := w.store.UpdateFeature(w.ctx, "nope", func(*flagadmin.Feature) (*flagadmin.Event, error) { called = true; return nil, nil })
			wantKind(t, "Store.UpdateFeature", err, flagadmin.ErrNotFound)
			wantEqual(t, "callback called", called, false)
		}},
		testCase{"store/DeleteUser writes nothing when the callback fails", func(t *testing.T, w *world) {
			w.load(serviceAccountFixture())
			err := w.store.DeleteUser(w.ctx, ciID, func(u flagadmin.User) (flagadmin.Event, error) {
				return ev(flagadmin.EventServiceAccountDeleted, "system", nil, "2026-06-15T12:00:00Z", nil, nil, nil, ""), errCallback
			})
			if !errors.Is(err, errCallback) {
				t.Errorf("Store.DeleteUser: got error %v, want the callback's error", err)
			}
			w.wantAccount(t, ciID, true)
			w.wantAuth(t, ciSecret, true)
			wantEqual(t, "default memberCount", project(t, w.projects(t, flagadmin.System, false), "default").MemberCount, 2)
			if n := len(w.allEvents()); n != 0 {
				t.Errorf("got %d events, want none", n)
			}
		}},
		testCase{"store/DeleteUser of a missing user is not found", func(t *testing.T, w *world) {
			w.load(accounts())
			called := false
			err := w.store.DeleteUser(w.ctx, 999, func(flagadmin.User) (flagadmin.Event, error) { called = true; return flagadmin.Event{}, nil })
			wantKind(t, "Store.DeleteUser", err, flagadmin.ErrNotFound)
			wantEqual(t, "callback called", called, false)
		}},
		testCase{"store/values read and written are copies", func(t *testing.T, w *world) {
			seed := lifecycleFixture()
			w.load(seed, namedEvent{"e", ev(flagadmin.EventFeatureUpdated, "eve@example.com", i64(eveID), "2025-01-01T00:00:00Z", str("default"), str("alpha"), str("production"), `{"a": "b"}`)})
			ctx, changed := w.ctx, at("2001-01-01T00:00:00Z")
			// Change everything reachable through what the store returned.
			f := w.feature(t, "alpha")
			*f.LastSeenAt, f.Tags[0].Value = changed, "changed"
			page, err := w.store.SearchEvents(ctx, flagadmin.EventQuery{Limit: 10})
			wantNoError(t, "Store.SearchEvents", err)
			e := page.Events[0]
			*e.Project, *e.FeatureName, *e.Environment, *e.CreatedByUserID = "changed", "changed", "changed", 99
			e.Data[2] = 'X'
			tok, _, err := w.store.LookupToken(ctx, flagadmin.HashSecret(ciSecret2))
			wantNoError(t, "Store.LookupToken", err)
			*tok.ExpiresAt, *tok.UserID = changed, 99
			// Change what the caller kept after a write.
			b := &flagadmin.Batch{
				Projects: []flagadmin.Project{{ID: "later", Name: "Later", Mode: flagadmin.ModeOpen, CreatedAt: suiteNow, ArchivedAt: atp("2026-01-01T00:00:00Z")}},
				Features: []flagadmin.Feature{{Name: "later", Project: "later", Type: flagadmin.TypeRelease, CreatedAt: suiteNow, LastSeenAt: atp("2026-01-01T00:00:00Z"), Lifecycle: initial}},
			}
			wantNoError(t, "Store.Write", w.store.Write(ctx, b))
			*b.Projects[0].ArchivedAt, *b.Features[0].LastSeenAt = changed, changed
			appended, err := w.svc.AppendEvent(ctx, ev(flagadmin.EventFeatureUpdated, "system", i64(7), "2025-01-02T00:00:00Z", str("default"), nil, nil, ""))
			wantNoError(t, "AppendEvent", err)
			*appended.Project, *appended.CreatedByUserID = "changed", 99
			err = w.store.UpdateFeature(ctx, "alpha", func(f *flagadmin.Feature) (*flagadmin.Event, error) {
				*f.LastSeenAt = changed
				return nil, errCallback
			})
			if !errors.Is(err, errCallback) {
				t.Errorf("Store.UpdateFeature: got error %v, want the callback's error", err)
			}

			again := w.feature(t, "alpha")
			wantTime(t, "alpha lastSeenAt", again.LastSeenAt, atp("2026-06-01T00:00:00Z"))
			wantEqual(t, "alpha tags", fmt.Sprint(again.Tags), "[{checkout simple #FFFFFF} {payments team}]")
			all := w.allEvents()
			if len(all) != 2 {
				t.Fatalf("got %d events, want 2", len(all))
			}
			wantEqual(t, "appended project", fmtPtr(all[1].Project), "default")
			wantEqual(t, "appended createdByUserId", fmtPtr(all[1].CreatedByUserID), "7")
			stored := all[0]
			wantEqual(t, "event project", fmtPtr(stored.Project), "default")
			wantEqual(t, "event featureName", fmtPtr(stored.FeatureName), "alpha")
			wantEqual(t, "event environment", fmtPtr(stored.Environment), "production")
			wantEqual(t, "event createdByUserId", fmtPtr(stored.CreatedByUserID), "2")
			wantJSON(t, "event data", stored.Data, `{"a": "b"}`)
			tok, _, err = w.store.LookupToken(ctx, flagadmin.HashSecret(ciSecret2))
			wantNoError(t, "Store.LookupToken", err)
			wantTime(t, "token expiresAt", tok.ExpiresAt, atp("2030-01-01T00:00:00Z"))
			wantEqual(t, "token userId", fmtPtr(tok.UserID), "10")
			p, err := w.store.Project(ctx, "later")
			wantNoError(t, "Store.Project", err)
			wantTime(t, "later archivedAt", p.ArchivedAt, atp("2026-01-01T00:00:00Z"))
			wantTime(t, "later lastSeenAt", w.feature(t, "later").LastSeenAt, atp("2026-01-01T00:00:00Z"))
		}},
		testCase{"store/CountTokens counts by type", func(t *testing.T, w *world) {
			w.load(accounts())
			for typ, want := range map[flagadmin.TokenType]int{flagadmin.TokenAdmin: 1, flagadmin.TokenClient: 1, flagadmin.TokenFrontend: 1, flagadmin.TokenUser: 10} {
				n, err := w.store.CountTokens(w.ctx, typ)
				wantNoError(t, "Store.CountTokens", err)
				wantEqual(t, "tokens of type "+string(typ), n, want)
			}
		}},
		testCase{"store/Ping reports a reachable store", func(t *testing.T, w *world) {
			wantNoError(t, "Store.Ping", w.store.Ping(w.ctx))
			wantNoError(t, "Service.Ping", w.svc.Ping(w.ctx))
		}},
		testCase{"world/create operations record their events as the system", func(t *testing.T, w *world) {
			ctx, sys := w.ctx, flagadmin.System
			u, err := w.svc.CreateUser(ctx, sys, flagadmin.User{Name: "Olga", Email: "olga@example.com"})
			wantNoError(t, "CreateUser", err)
			bot, err := w.svc.CreateUser(ctx, sys, flagadmin.User{Name: "Bot", Username: "bot", IsService: true})
			wantNoError(t, "CreateUser(service)", err)
			g, err := w.svc.CreateGroup(ctx, sys, flagadmin.Group{Name: "Crew", Users: []int64{u.ID}})
			wantNoError(t, "CreateGroup", err)
			wantNoError(t, "AddGroupMember", w.svc.AddGroupMember(ctx, sys, g.ID, bot.ID))
			_, err = w.svc.CreateProject(ctx, sys, flagadmin.Project{ID: "shop"})
			wantNoError(t, "CreateProject", err)
			wantNoError(t, "AddProjectMember(user)", w.svc.AddProjectMember(ctx, sys, "shop", userMember(u.ID, flagadmin.ProjectRoleOwner)))
			wantNoError(t, "AddProjectMember(group)", w.svc.AddProjectMember(ctx, sys, "shop", groupMember(g.ID, flagadmin.ProjectRoleMember)))
			_, err = w.svc.CreateFeature(ctx, sys, flagadmin.Feature{Name: "cart", Project: "shop", Tags: []flagadmin.Tag{{Type: "simple", Value: "cart"}}})
			wantNoError(t, "CreateFeature", err)
			_, _, err = w.svc.CreateAPIToken(ctx, sys, flagadmin.NewAPIToken{Name: "bot token", Type: flagadmin.TokenUser, UserID: &bot.ID})
			wantNoError(t, "CreateAPIToken", err)

			wantEqual(t, "user ids", fmt.Sprint(u.ID, bot.ID), "1 2")
			want := []string{"user-created", "service-account-created", "group-created", "group-user-added", "project-created", "project-user-added", "project-group-added", "feature-created", "pat-created"}
			all := w.allEvents()
			var got []string
			for _, e := range all {
				got = append(got, e.Type)
				wantEqual(t, e.Type+" createdBy", e.CreatedBy, "system")
				wantEqual(t, e.Type+" createdByUserId", fmtPtr(e.CreatedByUserID), fmt.Sprint(flagadmin.SystemUserID))
				wantTime(t, e.Type+" createdAt", &e.CreatedAt, &suiteNow)
			}
			wantEqual(t, "event types", fmt.Sprint(got), fmt.Sprint(want))
			if len(all) == len(want) {
				wantEqual(t, "feature-created project", fmtPtr(all[7].Project), "shop")
				wantEqual(t, "feature-created featureName", fmtPtr(all[7].FeatureName), "cart")
				wantEqual(t, "feature-created tags", fmt.Sprint(all[7].Tags), "[{cart simple}]")
			}
			access, err := w.store.ProjectAccess(ctx, bot.ID)
			wantNoError(t, "Store.ProjectAccess", err)
			wantEqual(t, "bot's role in shop", access.Roles["shop"], flagadmin.ProjectRoleMember)
		}},
		testCase{"world/create operations refuse taken ids and names", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			ctx, sys := w.ctx, flagadmin.System
			_, err := w.svc.CreateUser(ctx, sys, flagadmin.User{ID: eveID, Name: "Eve again"})
			wantValidation(t, err, "id")
			_, err = w.svc.CreateProject(ctx, sys, flagadmin.Project{ID: "default"})
			wantValidation(t, err, "id")
			_, err = w.svc.CreateFeature(ctx, sys, flagadmin.Feature{Name: "alpha", Project: "other"})
			wantValidation(t, err, "name")
			_, err = w.svc.CreateFeature(ctx, sys, flagadmin.Feature{Name: "zeta", Project: "nope"})
			wantValidation(t, err, "project")
			if n := len(w.allEvents()); n != 0 {
				t.Errorf("got %d events, want none", n)
			}
			_, err = w.store.Feature(ctx, "zeta")
			wantKind(t, "Store.Feature(zeta)", err, flagadmin.ErrNotFound)
		}},
		testCase{"world/EnsureAdminToken creates one admin token once", func(t *testing.T, w *world) {
			secret, created, err := w.svc.EnsureAdminToken(w.ctx)
			wantNoError(t, "EnsureAdminToken", err)
			wantEqual(t, "created", created, true)
			p := w.as(secret)
			wantEqual(t, "kind", p.Kind, flagadmin.PrincipalAdminToken)
			wantEqual(t, "name", p.Name, "admin")
			_, created, err = w.svc.EnsureAdminToken(w.ctx)
			wantNoError(t, "second EnsureAdminToken", err)
			wantEqual(t, "created again", created, false)
			n, err := w.store.CountTokens(w.ctx, flagadmin.TokenAdmin)
			wantNoError(t, "Store.CountTokens", err)
			wantEqual(t, "admin tokens", n, 1)
		}},
	)
	return cases
}

// batchIDs lists the ids of b's users, groups and events, and so their counts.
func batchIDs(b *flagadmin.Batch) string {
	var users, groups, events []int64
	for _, u := range b.Users {
		users = append(users, u.ID)
	}
	for _, g := range b.Groups {
		groups = append(groups, g.ID)
	}
	for _, e := range b.Events {
		events = append(events, e.ID)
	}
	return fmt.Sprintf("users %v groups %v events %v", users, groups, events)
}
