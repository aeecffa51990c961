package unleashimport_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/internal/unleashfixture"
)

// While a reading of the world is held up (a table it reads is locked in
// the source), events of known projects go on reaching the copy; an event
// of a project the copy does not know yet waits for the world, so that a
// new private project's events are never shown before the project (and
// its visibility) is known.
func TestFollowEventsDoNotWaitForTheWorld(t *testing.T) {
	url := unleashfixture.Restore(t)
	store := memstore.New()
	r := startFollower(t, url, store, slowWorldReads())
	caughtUp(t, r, fixtureEvents)
	ctx := context.Background()

	release := holdWorldReadings(t, url)

	u := connect(t, url)
	tx := u.begin()
	for _, s := range []string{
		`INSERT INTO projects (id, name) VALUES ('vault', 'Vault')`,
		`INSERT INTO project_settings (project, project_mode) VALUES ('vault', 'private')`,
	} {
		if _, err := tx.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	known := u.event(tx, "feature-updated", ptr("default"), ptr("dark-mode"), `{}`)
	created := u.event(tx, "project-created", ptr("vault"), nil, `{}`)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	took := waitFor(t, 20*time.Second, "the event of a known project while the world cannot be read", func() bool {
		return slices.Contains(storeIDs(t, store, fixtureEvents), known)
	})
	t.Logf("event %d at the copy after %s, the world's reading held up", known, took.Round(time.Millisecond))
	// Both events committed together: the poll that delivered the first
	// read the second too.
	if slices.Contains(storeIDs(t, store, fixtureEvents), created) {
		t.Fatalf("event %d of the new project vault reached the copy before the project", created)
	}

	release()
	waitFor(t, 20*time.Second, "the new project's event once the world is read", func() bool {
		return slices.Contains(storeIDs(t, store, fixtureEvents), created)
	})
	access, err := store.ProjectAccess(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(access.Private, "vault") {
		t.Fatalf("the new project's event is at the copy, and the copy's private projects %v lack vault", access.Private)
	}
}

// An event of a project that no longer exists in Unleash (events outlive
// their project) waits for one reading of the world, then reaches the
// copy; later events of that project need no reading, until one says
// the project was created again.
func TestFollowEventsOfAProjectThatIsGone(t *testing.T) {
	url := unleashfixture.Restore(t)
	store := memstore.New()
	r := startFollower(t, url, store, slowWorldReads())
	caughtUp(t, r, fixtureEvents)
	u := connect(t, url)
	at := func(id int64) func() bool {
		return func() bool { return slices.Contains(storeIDs(t, store, fixtureEvents), id) }
	}
	first := u.event(nil, "feature-updated", ptr("gone"), ptr("old-flag"), `{}`)
	waitFor(t, 20*time.Second, "the first event of a project that is gone", at(first))

	release := holdWorldReadings(t, url)
	second := u.event(nil, "feature-updated", ptr("gone"), ptr("old-flag"), `{}`)
	waitFor(t, 20*time.Second, "a later event of the project that is gone, the world's reading held up", at(second))
	again := u.event(nil, "project-created", ptr("gone"), nil, `{}`)
	known := u.event(nil, "feature-updated", ptr("default"), ptr("dark-mode"), `{}`)
	// The poll that reads known reads again before it, and holds it.
	waitFor(t, 20*time.Second, "the follower reading the events after it", func() bool { return r.Status().LagEvents >= 2 })
	if slices.Contains(storeIDs(t, store, fixtureEvents), again) {
		t.Fatalf("event %d, the project created again, reached the copy before a reading of the world", again)
	}
	release()
	waitFor(t, 20*time.Second, "the events after the world was read", at(known))
}

// slowWorldReads are fastFollow's options with a read timeout long enough
// for a test to hold a reading of the world up.
func slowWorldReads() unleashimport.FollowOptions {
	o := fastFollow(slog.New(slog.NewTextHandler(io.Discard, nil)))
	o.ReadTimeout = time.Minute
	return o
}

// A follower that starts on a copy (a restart, a takeover) has read no
// world yet: events of the projects the store holds reach the copy at
// once, and an event of a project created meanwhile waits for the world.
func TestFollowResumeDoesNotWaitForTheWorld(t *testing.T) {
	url := unleashfixture.Restore(t)
	store := memstore.New()
	r := startFollower(t, url, store, slowWorldReads())
	caughtUp(t, r, fixtureEvents)
	r.stop()

	release := holdWorldReadings(t, url)
	u := connect(t, url)
	known := u.event(nil, "feature-updated", ptr("payments"), ptr("dark-mode"), `{}`)
	created := u.change("project-created", ptr("vault"), nil,
		`INSERT INTO projects (id, name) VALUES ('vault', 'Vault')`,
		`INSERT INTO project_settings (project, project_mode) VALUES ('vault', 'private')`)

	r = startFollower(t, url, store, slowWorldReads())
	waitFor(t, 20*time.Second, "an event of a project the copy holds, before the first reading of the world", func() bool {
		return slices.Contains(storeIDs(t, store, fixtureEvents), known)
	})
	waitFor(t, 20*time.Second, "the follower reading the event after it", func() bool { return r.Status().LagEvents >= 1 })
	if slices.Contains(storeIDs(t, store, fixtureEvents), created) {
		t.Fatalf("event %d of the new project vault reached the copy before the project", created)
	}
	release()
	waitFor(t, 20*time.Second, "the new project's event once the world is read", func() bool {
		return slices.Contains(storeIDs(t, store, fixtureEvents), created)
	})
}

// holdWorldReadings locks a table every reading of the world reads
// (feature_tag) in the source until release is called (or the test ends):
// once the lock is granted, no reading can end until it is released (one
// that had read the table holds it until its end, and LOCK waits for that).
func holdWorldReadings(t *testing.T, url string) (release func()) {
	t.Helper()
	ctx := context.Background()
	lock := connect(t, url).begin()
	if _, err := lock.Exec(ctx, `LOCK TABLE feature_tag IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Rollback(ctx) })
	return func() {
		t.Helper()
		if err := lock.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
