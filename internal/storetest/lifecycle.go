package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// lifecycleFixture has four projects and their features:
//
//	default  open       alpha (tags simple:checkout with a color, team:payments), old (archived)
//	guarded  protected  beta; members: Max (Member), the Platform group (Member)
//	secret   private    gamma; members: Max (Member)
//	other    open       delta
func lifecycleFixture() *flagadmin.Seed {
	seed := accounts()
	seed.Projects = []flagadmin.Project{
		{ID: "default", Mode: flagadmin.ModeOpen},
		{ID: "guarded", Mode: flagadmin.ModeProtected, Members: []flagadmin.ProjectMembership{
			userMember(maxID, flagadmin.ProjectRoleMember), groupMember(platformGroupID, flagadmin.ProjectRoleMember),
		}},
		{ID: "secret", Mode: flagadmin.ModePrivate, Members: []flagadmin.ProjectMembership{userMember(maxID, flagadmin.ProjectRoleMember)}},
		{ID: "other", Mode: flagadmin.ModeOpen},
	}
	alpha := feat("alpha", "default", flagadmin.TypeRelease, at("2026-01-01T00:00:00Z"))
	alpha.Tags = []flagadmin.Tag{{Type: "simple", Value: "checkout", Color: flagadmin.ColorOf("#FFFFFF")}, {Type: "team", Value: "payments"}}
	alpha.LastSeenAt = atp("2026-06-01T00:00:00Z")
	old := feat("old", "default", flagadmin.TypeOperational, at("2025-01-01T00:00:00Z"))
	old.ArchivedAt = atp("2026-05-01T00:00:00Z")
	old.Stale = true
	seed.Features = []flagadmin.Feature{
		alpha, old,
		feat("beta", "guarded", flagadmin.TypeRelease, at("2026-01-01T00:00:00Z")),
		feat("gamma", "secret", flagadmin.TypeRelease, at("2026-01-01T00:00:00Z")),
		feat("delta", "other", flagadmin.TypeRelease, at("2026-01-01T00:00:00Z")),
	}
	return seed
}

func kept(value ...string) flagadmin.CompleteRequest {
	r := flagadmin.CompleteRequest{Status: flagadmin.StatusKept}
	if len(value) > 0 {
		r.StatusValue = &value[0]
	}
	return r
}

func discarded(value ...string) flagadmin.CompleteRequest {
	r := flagadmin.CompleteRequest{Status: flagadmin.StatusDiscarded}
	if len(value) > 0 {
		r.StatusValue = &value[0]
	}
	return r
}

// complete runs CompleteLifecycle as the token secret.
func (w *world) complete(secret, project, feature string, req flagadmin.CompleteRequest) error {
	w.t.Helper()
	return w.svc.CompleteLifecycle(w.ctx, w.as(secret), project, feature, req)
}

// wantCompletedEvents checks the number of feature-completed events.
func (w *world) wantCompletedEvents(t *testing.T, n int) []flagadmin.Event {
	t.Helper()
	events := w.eventsOfType(flagadmin.EventFeatureCompleted)
	if len(events) != n {
		t.Errorf("got %d feature-completed events, want %d", len(events), n)
	}
	return events
}

// wantLifecycle checks a feature's stored lifecycle.
func (w *world) wantLifecycle(t *testing.T, feature string, want flagadmin.Lifecycle) {
	t.Helper()
	if got := w.feature(t, feature).Lifecycle; got != want {
		t.Errorf("%s lifecycle: got %+v, want %+v", feature, got, want)
	}
}

var initial = flagadmin.Lifecycle{Stage: flagadmin.StageInitial}

func completed(status, value string) flagadmin.Lifecycle {
	return flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: status, StatusValue: value}
}

func lifecycleCases() []testCase {
	refused := []struct {
		name             string
		secret           string
		project, feature string
		kind             error
	}{
		{"404 for a missing project", adminSecret, "nope", "alpha", flagadmin.ErrNotFound},
		{"404 for a missing project before permissions", vicSecret, "nope", "alpha", flagadmin.ErrNotFound},
		{"404 for a missing feature", adminSecret, "default", "nope", flagadmin.ErrNotFound},
		{"404 for a feature of another project", adminSecret, "default", "delta", flagadmin.ErrNotFound},
		{"404 for a feature name in another case", adminSecret, "default", "ALPHA", flagadmin.ErrNotFound},
		{"404 for a private project an Editor cannot see", eveSecret, "secret", "gamma", flagadmin.ErrNotFound},
		{"404 for a private project a group member of other projects cannot see", gusSecret, "secret", "gamma", flagadmin.ErrNotFound},
		{"403 for a Viewer on an open project", vicSecret, "default", "alpha", flagadmin.ErrNoAccess},
		{"403 for an Editor on a protected project", eveSecret, "guarded", "beta", flagadmin.ErrNoAccess},
		{"403 for an Editor service account on a protected project", ciSecret, "guarded", "beta", flagadmin.ErrNoAccess},
		{"403 for a member of another project", maxSecret, "default", "alpha", flagadmin.ErrNoAccess},
	}
	var cases []testCase
	for _, r := range refused {
		cases = append(cases, testCase{"lifecycle/" + r.name, func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			err := w.complete(r.secret, r.project, r.feature, kept("v1"))
			wantKind(t, "CompleteLifecycle", err, r.kind)
			if r.kind == flagadmin.ErrNotFound && errors.Is(err, flagadmin.ErrNoAccess) {
				t.Errorf("got a NoAccess error, want only NotFound")
			}
			w.wantCompletedEvents(t, 0)
			for _, f := range []string{"alpha", "beta", "gamma", "delta"} {
				w.wantLifecycle(t, f, initial)
			}
		}})
	}

	allowed := []struct {
		name             string
		secret           string
		project, feature string
		by               string
		byID             int64
	}{
		{"admin token may complete", adminSecret, "default", "alpha", adminTokenName, flagadmin.AdminTokenUserID},
		{"root Admin may complete on a private project", adaSecret, "secret", "gamma", "ada@example.com", adaID},
		{"Editor may complete on an open project", eveSecret, "default", "alpha", "eve@example.com", eveID},
		{"Editor service account may complete on an open project", ciSecret, "default", "alpha", "ci-bot", ciID},
		{"Editor without email is recorded by username", nedSecret, "default", "alpha", "ned", nedID},
		{"direct member may complete on a protected project", maxSecret, "guarded", "beta", "max@example.com", maxID},
		{"member through a group may complete on a protected project", gusSecret, "guarded", "beta", "gus@example.com", gusID},
		{"member may complete on a private project", maxSecret, "secret", "gamma", "max@example.com", maxID},
	}
	for _, r := range allowed {
		cases = append(cases, testCase{"lifecycle/" + r.name, func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			wantNoError(t, "CompleteLifecycle", w.complete(r.secret, r.project, r.feature, kept("v1")))
			w.wantLifecycle(t, r.feature, completed(flagadmin.StatusKept, "v1"))
			events := w.wantCompletedEvents(t, 1)
			if len(events) == 1 {
				wantEqual(t, "createdBy", events[0].CreatedBy, r.by)
				wantEqual(t, "createdByUserId", fmtPtr(events[0].CreatedByUserID), fmt.Sprint(r.byID))
				wantEqual(t, "project", fmtPtr(events[0].Project), r.project)
				wantEqual(t, "featureName", fmtPtr(events[0].FeatureName), r.feature)
			}
		}})
	}

	cases = append(cases,
		testCase{"lifecycle/event records status, statusValue, kept, the feature's tags and the time", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			wantNoError(t, "CompleteLifecycle", w.complete(adminSecret, "default", "alpha", kept("v2.1")))
			events := w.wantCompletedEvents(t, 1)
			if len(events) != 1 {
				return
			}
			e := events[0]
			wantJSON(t, "data", e.Data, `{"status": "kept", "statusValue": "v2.1", "kept": true}`)
			wantJSON(t, "preData", e.PreData, "null")
			// The flag's tags as Unleash writes them on feature-completed:
			// {"value","type"}, without the color of the tag's type.
			tags, err := json.Marshal(e.Tags)
			wantNoError(t, "tags", err)
			wantEqual(t, "tags", string(tags), `[{"value":"checkout","type":"simple"},{"value":"payments","type":"team"}]`)
			wantTime(t, "createdAt", &e.CreatedAt, &suiteNow)
			wantEqual(t, "environment", fmtPtr(e.Environment), "null")
			// The event is visible to searches by feature and type.
			page := w.search(t, w.as(adminSecret), params{Feature: "IS:alpha", Type: "IS:feature-completed"})
			if len(page.Events) != 1 || page.Events[0].ID != e.ID {
				t.Errorf("search by feature and type: got %d events, want the feature-completed event", len(page.Events))
			}
		}},
		testCase{"lifecycle/discarded without statusValue has no statusValue in the event", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			wantNoError(t, "CompleteLifecycle", w.complete(adminSecret, "other", "delta", discarded()))
			w.wantLifecycle(t, "delta", completed(flagadmin.StatusDiscarded, ""))
			if events := w.wantCompletedEvents(t, 1); len(events) == 1 {
				wantJSON(t, "data", events[0].Data, `{"status": "discarded", "kept": false}`)
				wantEqual(t, "tags", len(events[0].Tags), 0)
			}
		}},
		testCase{"lifecycle/repeating the same outcome records nothing", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			for i := range 3 {
				wantNoError(t, fmt.Sprintf("CompleteLifecycle #%d", i+1), w.complete(eveSecret, "default", "alpha", kept("v1")))
			}
			w.wantCompletedEvents(t, 1)
			w.wantLifecycle(t, "alpha", completed(flagadmin.StatusKept, "v1"))
		}},
		testCase{"lifecycle/a changed outcome records a new event", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			wantNoError(t, "complete kept", w.complete(adminSecret, "default", "alpha", kept("v1")))
			wantNoError(t, "complete discarded", w.complete(adminSecret, "default", "alpha", discarded("v1")))
			w.wantLifecycle(t, "alpha", completed(flagadmin.StatusDiscarded, "v1"))
			if events := w.wantCompletedEvents(t, 2); len(events) == 2 {
				wantJSON(t, "first data", events[0].Data, `{"status": "kept", "statusValue": "v1", "kept": true}`)
				wantJSON(t, "second data", events[1].Data, `{"status": "discarded", "statusValue": "v1", "kept": false}`)
			}
		}},
		testCase{"lifecycle/a changed statusValue records a new event", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			wantNoError(t, "complete v1", w.complete(adminSecret, "default", "alpha", kept("v1")))
			wantNoError(t, "complete v2", w.complete(adminSecret, "default", "alpha", kept("v2")))
			wantNoError(t, "complete v2 again", w.complete(adminSecret, "default", "alpha", kept("v2")))
			w.wantLifecycle(t, "alpha", completed(flagadmin.StatusKept, "v2"))
			if events := w.wantCompletedEvents(t, 2); len(events) == 2 {
				wantJSON(t, "second data", events[1].Data, `{"status": "kept", "statusValue": "v2", "kept": true}`)
			}
		}},
		testCase{"lifecycle/an archived feature can be completed", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			wantNoError(t, "CompleteLifecycle", w.complete(adminSecret, "default", "old", discarded("removed")))
			w.wantLifecycle(t, "old", completed(flagadmin.StatusDiscarded, "removed"))
			w.wantCompletedEvents(t, 1)
			f := w.feature(t, "old")
			wantTime(t, "archivedAt stays", f.ArchivedAt, atp("2026-05-01T00:00:00Z"))
		}},
		testCase{"lifecycle/completion changes only the lifecycle of the feature", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			before := w.feature(t, "alpha")
			wantNoError(t, "CompleteLifecycle", w.complete(adminSecret, "default", "alpha", kept("v1")))
			after := w.feature(t, "alpha")
			wantEqual(t, "lifecycle", after.Lifecycle, completed(flagadmin.StatusKept, "v1"))
			wantEqual(t, "project", after.Project, before.Project)
			wantEqual(t, "type", after.Type, before.Type)
			wantEqual(t, "stale", after.Stale, before.Stale)
			wantTime(t, "createdAt", &after.CreatedAt, &before.CreatedAt)
			wantTime(t, "archivedAt", after.ArchivedAt, before.ArchivedAt)
			wantTime(t, "lastSeenAt", after.LastSeenAt, before.LastSeenAt)
			wantEqual(t, "tags", fmt.Sprint(after.Tags), fmt.Sprint(before.Tags))
			w.wantLifecycle(t, "beta", initial)
		}},
		testCase{"lifecycle/a seeded completion is kept and compared", func(t *testing.T, w *world) {
			seed := lifecycleFixture()
			seed.Features[0].Lifecycle = completed(flagadmin.StatusKept, "seeded")
			w.load(seed)
			w.wantLifecycle(t, "alpha", completed(flagadmin.StatusKept, "seeded"))
			wantNoError(t, "complete as seeded", w.complete(adminSecret, "default", "alpha", kept("seeded")))
			w.wantCompletedEvents(t, 0)
			wantNoError(t, "complete differently", w.complete(adminSecret, "default", "alpha", kept("other")))
			w.wantCompletedEvents(t, 1)
		}},
		testCase{"lifecycle/status must be kept or discarded", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			wantValidation(t, w.complete(adminSecret, "default", "alpha", flagadmin.CompleteRequest{Status: "maybe"}), "status")
			wantValidation(t, w.complete(adminSecret, "default", "alpha", flagadmin.CompleteRequest{}), "status")
			long := strings.Repeat("x", 256)
			wantValidation(t, w.complete(adminSecret, "default", "alpha", kept(long)), "statusValue")
			w.wantCompletedEvents(t, 0)
			w.wantLifecycle(t, "alpha", initial)
		}},
		testCase{"lifecycle/statusValue of 255 characters is stored whole", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			value := strings.Repeat("é", 255)
			wantNoError(t, "CompleteLifecycle", w.complete(adminSecret, "default", "alpha", kept(value)))
			w.wantLifecycle(t, "alpha", completed(flagadmin.StatusKept, value))
		}},
	)
	return cases
}
