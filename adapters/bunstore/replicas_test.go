package bunstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// Two servers sharing one database, each with its own result cache (as
// replicas behind a load balancer): a write through one is seen by the
// very next read through the other, which had the old answer cached.
func replicasSeeEachOthersWrites(t *testing.T, url string) {
	ctx := context.Background()
	w, err := worldgen.New(worldgen.Config{Events: 300, Projects: 4, Features: 40, Users: 20, Groups: 2, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	storeA, storeB := open(t, url), open(t, url)
	batch := w.Batch()
	batch.Events = w.FirstEvents(300)
	if err := storeA.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	replica := func(s *bunstore.Store) *flagadmin.Service {
		return flagadmin.NewService(storecache.New(s, storecache.Options{ResultCacheSize: 8 << 20}))
	}
	a, b := replica(storeA), replica(storeB)
	principal := func(svc *flagadmin.Service) flagadmin.Principal {
		p, err := svc.Authenticate(ctx, w.AdminSecret(0))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	pa, pb := principal(a), principal(b)
	search := func() flagadmin.EventPage {
		t.Helper()
		page, err := b.SearchEvents(ctx, pb, flagadmin.EventSearchParams{Limit: "5"})
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	list := func() []byte {
		t.Helper()
		return projectListJSON(t, b, pb)
	}

	before, beforeList := search(), list()
	if again := search(); again.Total != before.Total || again.Events[0].ID != before.Events[0].ID {
		t.Fatalf("repeated search differs: %+v vs %+v", again.Events[0], before.Events[0])
	}
	f := w.Features()[0]
	if err := a.CompleteLifecycle(ctx, pa, f.Project, f.Name, flagadmin.CompleteRequest{Status: flagadmin.StatusDiscarded}); err != nil {
		t.Fatal(err)
	}

	after := search()
	if after.Total != before.Total+1 {
		t.Errorf("replica B: total %d after a write through A, want %d", after.Total, before.Total+1)
	}
	if e := after.Events[0]; e.Type != flagadmin.EventFeatureCompleted || e.FeatureName == nil || *e.FeatureName != f.Name {
		t.Errorf("replica B: newest event is #%d %s, want the completion of %s written through A", e.ID, e.Type, f.Name)
	}
	if afterList := list(); bytes.Equal(afterList, beforeList) {
		t.Error("replica B: project list unchanged after a completion through A (its lastUpdatedAt must move)")
	}
	want := projectListJSON(t, replica(storeA), pa)
	if got := list(); !bytes.Equal(got, want) {
		t.Errorf("replica B's project list differs from a fresh server's:\n got %s\nwant %s", got, want)
	}
}

// projectListJSON is the project list of p through svc, as JSON.
func projectListJSON(t *testing.T, svc *flagadmin.Service, p flagadmin.Principal) []byte {
	t.Helper()
	list, err := svc.ListProjects(context.Background(), p, flagadmin.ProjectListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func TestReplicasSeeEachOthersWritesSQLite(t *testing.T) {
	replicasSeeEachOthersWrites(t, dbtest.SQLite(t))
}

func TestReplicasSeeEachOthersWritesPostgres(t *testing.T) {
	replicasSeeEachOthersWrites(t, dbtest.Postgres(t))
}

func TestReplicasSeeEachOthersWritesMySQL(t *testing.T) {
	replicasSeeEachOthersWrites(t, dbtest.MySQL(t))
}
