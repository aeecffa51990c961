package webhooks_test

import (
	"context"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/webhooks"
	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestStatusCountsTheLagOfEachSink(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	register(t, s, "archived", "unconfigured")
	writeEvents(t, s, 3, flagadmin.EventFeatureCreated)
	archived := writeEvents(t, s, 2, flagadmin.EventFeatureArchived)
	sinks := []flagadmin.WebhookSink{
		sinkTo("archived", "http://127.0.0.1:1/", flagadmin.EventSearchParams{Type: "IS:" + flagadmin.EventFeatureArchived}),
		sinkTo("new", "http://127.0.0.1:1/", flagadmin.EventSearchParams{}),
	}
	got, err := webhooks.Status(ctx, s, sinks, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d sinks, want 3: %+v", len(got), got)
	}
	byName := map[string]webhooks.SinkStatus{}
	for _, st := range got {
		byName[st.Name] = st
	}
	if st := byName["archived"]; !st.Registered || !st.Filtered || st.LagEvents != 2 || st.LagAtLeast || st.OldestPending.IsZero() {
		t.Errorf("archived: %+v, want a lag of its 2 events (%v)", st, archived)
	}
	if st := byName["unconfigured"]; !st.Registered || st.Filtered || st.LagEvents != 4 || !st.LagAtLeast {
		t.Errorf("unconfigured: %+v, want every event counted, stopped at 4", st)
	}
	if st := byName["new"]; st.Registered {
		t.Errorf("new: %+v, want not registered", st)
	}
}
