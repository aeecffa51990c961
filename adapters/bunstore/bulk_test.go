package bunstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
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

// TestLargeEventsSplitIntoStatements writes events whose texts together
// pass what one INSERT may carry (stored.MaxInsertBytes), with ids the
// database draws (Write) and with ids they carry (Load), and reads each
// back whole, in order, with its id.
func TestLargeEventsSplitIntoStatements(t *testing.T) {
	ctx := context.Background()
	events := func(from, n int) []flagadmin.Event {
		out := make([]flagadmin.Event, n)
		for i := range out {
			blob := strings.Repeat(string(rune('a'+(from+i)%26)), 700_000)
			out[i] = flagadmin.Event{
				CreatedAt: time.Date(2024, 3, 1, 12, 0, from+i, 0, time.UTC), Type: "feature-updated", CreatedBy: "ada",
				Data: json.RawMessage(`{"n":` + strconv.Itoa(from+i) + `,"blob":"` + blob + `"}`),
			}
		}
		return out
	}
	check := func(t *testing.T, s *bunstore.Store, firstID int64) {
		t.Helper()
		page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Limit: 20})
		must(t, "SearchEvents", err)
		if len(page.Events) != 7 {
			t.Fatalf("got %d events, want 7", len(page.Events))
		}
		for i, e := range page.Events {
			n := 6 - i // newest first
			var data struct {
				N    int    `json:"n"`
				Blob string `json:"blob"`
			}
			must(t, "data", json.Unmarshal(e.Data, &data))
			if e.ID != firstID+int64(n) || data.N != n || len(data.Blob) != 700_000 || data.Blob[0] != byte('a'+n%26) {
				t.Errorf("event %d: id %d, n %d, blob of %d bytes; want id %d, n %d, 700000 bytes", i, e.ID, data.N, len(data.Blob), firstID+int64(n), n)
			}
		}
		leaves, err := s.LogLeaves(ctx, 0, 7)
		must(t, "LogLeaves", err)
		for _, l := range leaves {
			if n := l.CreatedAt.Second(); l.EventID != firstID+int64(n) {
				t.Errorf("leaf %d: event %d, created at second %d; want event %d", l.Index, l.EventID, n, firstID+int64(n))
			}
		}
	}
	t.Run("drawn", func(t *testing.T) {
		forEachEngine(t, func(t *testing.T, url string) {
			s := open(t, url)
			b := &flagadmin.Batch{Events: events(0, 7)}
			must(t, "Write", s.Write(ctx, b))
			for i, e := range b.Events { // the ids Write sets
				if e.ID != int64(i+1) {
					t.Errorf("written event %d: id %d, want %d", i, e.ID, i+1)
				}
			}
			check(t, s, 1)
		})
	})
	t.Run("given", func(t *testing.T) {
		forEachEngine(t, func(t *testing.T, url string) {
			given := events(0, 7)
			for i := range given {
				given[i].ID = int64(100 + i)
			}
			s := open(t, url)
			must(t, "Load", s.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error { return emit(given) }))
			check(t, s, 100)
		})
	})
}
