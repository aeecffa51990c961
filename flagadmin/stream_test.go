package flagadmin_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestParseEventStream(t *testing.T) {
	type params = flagadmin.EventStreamParams
	search := func(s flagadmin.EventSearchParams) params { return params{EventSearchParams: s} }
	tests := []struct {
		name   string
		p      params
		after  int64
		resume bool
		paths  []string // a validation error naming these
	}{
		{"neither: from now", params{}, 0, false, nil},
		{"afterId", params{AfterID: "42"}, 42, true, nil},
		{"afterId 0 replays everything", params{AfterID: "0"}, 0, true, nil},
		{"Last-Event-ID", params{LastEventID: "7"}, 7, true, nil},
		{"Last-Event-ID wins over afterId", params{AfterID: "3", LastEventID: "9"}, 9, true, nil},
		{"filters as the search", search(flagadmin.EventSearchParams{Type: "IS:feature-completed"}), 0, false, nil},
		{"negative afterId", params{AfterID: "-1"}, 0, false, []string{"afterId"}},
		{"afterId with a sign", params{AfterID: "+1"}, 0, false, []string{"afterId"}},
		{"afterId too large", params{AfterID: "99999999999999999999"}, 0, false, []string{"afterId"}},
		{"Last-Event-ID not a number", params{LastEventID: "abc"}, 0, false, []string{"Last-Event-ID"}},
		{"Last-Event-ID with spaces", params{LastEventID: " 1"}, 0, false, []string{"Last-Event-ID"}},
		{"limit, offset, after", search(flagadmin.EventSearchParams{Limit: "1", Offset: "0", After: "x"}), 0, false, []string{"limit", "offset", "after"}},
		{"a bad filter", search(flagadmin.EventSearchParams{Type: "no-such-type"}), 0, false, []string{"type"}},
		{"every bad value named", params{EventSearchParams: flagadmin.EventSearchParams{From: "IS:2025-02-30"}, AfterID: "x", LastEventID: "y"}, 0, false, []string{"from", "afterId", "Last-Event-ID"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, after, resume, err := flagadmin.ParseEventStream(tt.p)
			if tt.paths != nil {
				var ve *flagadmin.ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("got %v, want a ValidationError naming %v", err, tt.paths)
				}
				var got []string
				for _, f := range ve.Fields {
					got = append(got, f.Path)
				}
				for _, p := range tt.paths {
					if !slices.Contains(got, p) {
						t.Errorf("fields %v, want %s among them", got, p)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			if after != tt.after || resume != tt.resume {
				t.Errorf("got after %d resume %v, want %d %v", after, resume, tt.after, tt.resume)
			}
			if q.Limit != 0 || q.Offset != 0 || q.After != nil {
				t.Errorf("query has paging: %+v", q)
			}
		})
	}
}

// fixedFeed is an EventFeed whose newest event is last.
type fixedFeed struct{ last int64 }

func (f fixedFeed) LastEventID(context.Context) (int64, error) { return f.last, nil }
func (f fixedFeed) Follow(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func([]flagadmin.Event) error) error {
	return fn([]flagadmin.Event{{ID: afterID + 1}})
}

func TestStreamEventsVisibilityAndStart(t *testing.T) {
	ctx := context.Background()
	svc := flagadmin.NewService(memstore.New())
	seed := `{"users":[{"id":3,"name":"Vic","rootRole":"Viewer"}],
		"projects":[{"id":"open"},{"id":"secret","mode":"private"}]}`
	if err := svc.LoadSeed(ctx, strings.NewReader(seed)); err != nil {
		t.Fatal(err)
	}
	viewer := flagadmin.AsUser(flagadmin.User{ID: 3, Name: "Vic", RootRole: flagadmin.RoleViewer})
	st, err := svc.StreamEvents(ctx, viewer, flagadmin.EventStreamParams{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Query.RequireProject || !slices.Equal(st.Query.HiddenProjects, []string{"secret", flagadmin.AllProjects}) {
		t.Errorf("a Viewer's query: got %+v, want project-less events, the private project and events of every project hidden", st.Query)
	}
	admin, err := svc.StreamEvents(ctx, flagadmin.AdminToken("admin"), flagadmin.EventStreamParams{})
	if err != nil {
		t.Fatal(err)
	}
	if admin.Query.RequireProject || len(admin.Query.HiddenProjects) > 0 {
		t.Errorf("an admin's query: got %+v, want no visibility filter", admin.Query)
	}
	if _, err := svc.StreamEvents(ctx, flagadmin.Principal{Kind: flagadmin.PrincipalClientToken}, flagadmin.EventStreamParams{}); !errors.Is(err, flagadmin.ErrNoAccess) {
		t.Errorf("a client token: got %v, want ErrNoAccess", err)
	}
	// Without a resume point the stream starts at the feed's newest event.
	var got []int64
	err = st.Run(ctx, fixedFeed{last: 41}, func(events []flagadmin.Event) error {
		got = append(got, events[0].ID)
		return nil
	})
	if err != nil || !slices.Equal(got, []int64{42}) || st.AfterID != 41 {
		t.Errorf("from now: got %v (err %v, start %d), want [42] after 41", got, err, st.AfterID)
	}
}
