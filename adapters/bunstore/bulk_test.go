package bunstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// bulkEvents makes n varied events, oldest first, one millisecond apart.
func bulkEvents(n int) []flagadmin.Event {
	start := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	types := []string{"feature-created", "feature-updated", "feature-environment-enabled", "feature-archived"}
	out := make([]flagadmin.Event, n)
	for i := range out {
		project, feature, env := fmt.Sprintf("p%d", i%7), fmt.Sprintf("f%d", i%50), "production"
		uid, gid, gtype := int64(i%5), fmt.Sprintf("01WG%022d", i/10), "transaction"
		e := flagadmin.Event{
			CreatedAt:       start.Add(time.Duration(i) * time.Millisecond),
			Type:            types[i%len(types)],
			CreatedBy:       fmt.Sprintf("user%d@example.com", uid),
			CreatedByUserID: &uid,
			Project:         &project,
			FeatureName:     &feature,
			GroupType:       &gtype,
			GroupID:         &gid,
			Data:            json.RawMessage(fmt.Sprintf(`{"name":"f%d","note":"Bulk %d of 100%%_done","strategy":{"rollout":%d}}`, i%50, i, i%100)),
		}
		if i%3 == 0 {
			e.Environment = &env
			e.PreData = json.RawMessage(`{"enabled":false}`)
			e.Tags = []flagadmin.Tag{{Type: "simple", Value: fmt.Sprintf("tag%d", i%11)}}
		}
		out[i] = e
	}
	return out
}

func TestInsertEvents(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		in := bulkEvents(2345)
		must(t, "InsertEvents", s.InsertEvents(ctx, in, 1000))

		page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Limit: flagadmin.SearchMaxLimit})
		must(t, "SearchEvents", err)
		if page.Total != len(in) {
			t.Fatalf("total: got %d, want %d", page.Total, len(in))
		}
		// Newest first, ids increasing in insertion order.
		for i, got := range page.Events {
			want := in[len(in)-1-i]
			want.ID = got.ID
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("event %d: got %+v, want %+v", i, got, want)
			}
			if i > 0 && got.ID >= page.Events[i-1].ID {
				t.Fatalf("event %d: id %d not below the previous %d", i, got.ID, page.Events[i-1].ID)
			}
		}

		counts := []struct {
			name string
			q    flagadmin.EventQuery
			want int
		}{
			{"one project", flagadmin.EventQuery{Projects: []string{"p3"}}, countOf(in, func(e flagadmin.Event) bool { return *e.Project == "p3" })},
			{"query in data", flagadmin.EventQuery{Text: "bulk 1234 of"}, 1},
			{"query with literal % and _", flagadmin.EventQuery{Text: "100%_done"}, len(in)},
			{"_ is not a wildcard", flagadmin.EventQuery{Text: "100%xdone"}, 0},
			{"query in tags", flagadmin.EventQuery{Text: `"tag10"`}, countOf(in, func(e flagadmin.Event) bool { return len(e.Tags) > 0 && e.Tags[0].Value == "tag10" })},
			{"group", flagadmin.EventQuery{GroupIDs: []string{"01WG0000000000000000000007"}}, 10},
		}
		for _, c := range counts {
			c.q.Limit = 5
			page, err := s.SearchEvents(ctx, c.q)
			must(t, c.name, err)
			if page.Total != c.want {
				t.Errorf("%s: total %d, want %d", c.name, page.Total, c.want)
			}
		}

		// Events written afterwards continue the ids.
		b := &flagadmin.Batch{Events: bulkEvents(2)}
		must(t, "Write", s.Write(ctx, b))
		if maxID := slices.MaxFunc(page.Events, func(a, b flagadmin.Event) int { return int(a.ID - b.ID) }).ID; b.Events[0].ID <= maxID || b.Events[1].ID <= b.Events[0].ID {
			t.Errorf("ids after the bulk insert: got %d, %d; want increasing above %d", b.Events[0].ID, b.Events[1].ID, maxID)
		}
	})
}

func countOf(events []flagadmin.Event, match func(flagadmin.Event) bool) int {
	n := 0
	for _, e := range events {
		if match(e) {
			n++
		}
	}
	return n
}
