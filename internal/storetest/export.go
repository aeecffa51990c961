package storetest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// exportParams are the parameters of an export.
type exportParams = flagadmin.EventExportParams

// export runs the export of params as p to its end and returns its events.
func (w *world) export(t *testing.T, p flagadmin.Principal, params exportParams) []flagadmin.Event {
	t.Helper()
	exp, err := w.svc.ExportEvents(w.ctx, p, params)
	if err != nil {
		t.Fatalf("ExportEvents(%+v): got error %v, want nil", params, err)
	}
	var out []flagadmin.Event
	err = exp.Run(w.ctx, func(e flagadmin.Event) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatalf("EventExport.Run(%+v): got error %v, want nil", params, err)
	}
	return out
}

// byID returns events sorted by id, ascending.
func byID(events []flagadmin.Event) []flagadmin.Event {
	out := slices.Clone(events)
	slices.SortFunc(out, func(a, b flagadmin.Event) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// wantIDOrder checks that events ascend strictly by id.
func wantIDOrder(t *testing.T, events []flagadmin.Event) {
	t.Helper()
	for i := 1; i < len(events); i++ {
		if events[i].ID <= events[i-1].ID {
			t.Fatalf("event %d (id %d) follows id %d: want ids ascending, no repeats", i, events[i].ID, events[i-1].ID)
		}
	}
}

func exportCases() []testCase {
	filters := []struct {
		name   string
		secret string
		search params
	}{
		{"every event", adminSecret, params{}},
		{"a project filter", adminSecret, params{Project: "IS:alt"}},
		{"IS_ANY_OF and a type", adminSecret, params{Project: "IS_ANY_OF:default,secret", Type: "IS:feature-created"}},
		{"a date range", adminSecret, params{From: "IS:2025-03-01", To: "IS:2025-03-04"}},
		{"free text", adminSecret, params{Query: "needle"}},
		{"as a Viewer", vicSecret, params{}},
		{"as a Viewer naming the private project", vicSecret, params{Project: "IS:secret"}},
		{"as a member of the private project", maxSecret, params{Query: "needle"}},
		{"as a service account", ciSecret, params{Type: "IS:feature-updated"}},
	}
	var cases []testCase
	for _, c := range filters {
		cases = append(cases, testCase{"export/holds exactly what the search pages through: " + c.name, func(t *testing.T, w *world) {
			w.fixture(tiesFixture())
			p := w.as(c.secret)
			want := byID(w.reference(t, p, c.search))
			got := w.export(t, p, exportParams{EventSearchParams: c.search})
			wantIDOrder(t, got)
			if g, wn := w.eventNames(got), w.eventNames(want); !slices.Equal(g, wn) {
				t.Errorf("the export holds\n%v\nwant\n%v", g, wn)
			}
			// The events are the search's, field for field.
			for i := range min(len(got), len(want)) {
				g, _ := json.Marshal(got[i])
				wn, _ := json.Marshal(want[i])
				if string(g) != string(wn) {
					t.Errorf("exported event %s:\n%s\nwant\n%s", w.eventNames(got[i : i+1])[0], g, wn)
				}
			}
		}})
	}
	cases = append(cases,
		testCase{"export/afterId resumes with exactly the rest", func(t *testing.T, w *world) {
			w.fixture(tiesFixture())
			p := w.as(vicSecret)
			all := w.export(t, p, exportParams{})
			for _, cut := range []int{0, 1, len(all) / 2, len(all) - 1} {
				rest := w.export(t, p, exportParams{AfterID: strconv.FormatInt(all[cut].ID, 10)})
				if g, wn := w.eventNames(rest), w.eventNames(all[cut+1:]); !slices.Equal(g, wn) {
					t.Errorf("after id %d: got %v, want %v", all[cut].ID, g, wn)
				}
			}
			wantEqual(t, "events after afterId 0", len(w.export(t, p, exportParams{AfterID: "0"})), len(all))
			wantEqual(t, "events after the last id", len(w.export(t, p, exportParams{AfterID: strconv.FormatInt(all[len(all)-1].ID+1000, 10)})), 0)
		}},
		testCase{"export/many events of one millisecond, over several batches, each once in id order", func(t *testing.T, w *world) {
			n := 2*flagadmin.ExportBatchSize + 7
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "default", Name: "Default", Mode: flagadmin.ModeOpen}}
			events := make([]namedEvent, n)
			for i := range events {
				events[i] = namedEvent{"m" + strconv.Itoa(i), ev(flagadmin.EventFeatureUpdated, "system", nil, "2025-05-05T05:05:05.555Z", str("default"), nil, nil, fmt.Sprintf(`{"n": %d}`, i))}
			}
			w.load(seed, events...)
			got := w.export(t, w.as(vicSecret), exportParams{})
			wantEqual(t, "exported events", len(got), n)
			wantIDOrder(t, got)
			for i, e := range got {
				if name := w.names[e.ID]; name != "m"+strconv.Itoa(i) {
					t.Fatalf("event %d of the export is %s, want m%d", i, name, i)
				}
			}
			// And the search walks them by cursor the same way, newest id first.
			walked, _ := w.walk(t, w.as(vicSecret), params{Limit: "333"}, nil)
			wantEqual(t, "walked events", len(walked), n)
			for i, e := range walked {
				if want := got[n-1-i].ID; e.ID != want {
					t.Fatalf("event %d of the walk has id %d, want %d", i, e.ID, want)
				}
			}
		}},
		testCase{"export/stops at the callback's error and at a cancelled context", func(t *testing.T, w *world) {
			w.fixture(tiesFixture())
			p := w.as(adminSecret)
			exp, err := w.svc.ExportEvents(w.ctx, p, exportParams{})
			wantNoError(t, "ExportEvents", err)
			calls := 0
			err = exp.Run(w.ctx, func(flagadmin.Event) error {
				calls++
				if calls == 3 {
					return errCallback
				}
				return nil
			})
			if !errors.Is(err, errCallback) {
				t.Errorf("Run: got error %v, want the callback's", err)
			}
			wantEqual(t, "calls", calls, 3)
			ctx, cancel := context.WithCancel(w.ctx)
			calls = 0
			err = exp.Run(ctx, func(flagadmin.Event) error {
				if calls++; calls == 2 {
					cancel()
				}
				return ctx.Err()
			})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run with a cancelled context: got error %v, want context.Canceled", err)
			}
			err = w.store.ExportEvents(ctx, flagadmin.EventQuery{}, 0, func(flagadmin.Event) error { return nil })
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Store.ExportEvents with a cancelled context: got error %v, want context.Canceled", err)
			}
		}},
		testCase{"export/events written during an export with greater ids are included, none twice", func(t *testing.T, w *world) {
			w.fixture(tiesFixture())
			p := w.as(adminSecret)
			before := w.export(t, p, exportParams{})
			exp, err := w.svc.ExportEvents(w.ctx, p, exportParams{})
			wantNoError(t, "ExportEvents", err)
			var got []flagadmin.Event
			err = exp.Run(w.ctx, func(e flagadmin.Event) error {
				if len(got) == 5 {
					b := &flagadmin.Batch{Events: []flagadmin.Event{ev(flagadmin.EventFeatureUpdated, "system", nil, "2026-06-15T12:00:00Z", str("alt"), nil, nil, "")}}
					if err := w.store.Write(w.ctx, b); err != nil {
						return err
					}
				}
				got = append(got, e)
				return nil
			})
			wantNoError(t, "Run", err)
			wantIDOrder(t, got)
			if len(got) != len(before) && len(got) != len(before)+1 {
				t.Errorf("got %d events, want %d or %d", len(got), len(before), len(before)+1)
			}
			if g, wn := w.eventNames(got[:len(before)]), w.eventNames(before); !slices.Equal(g, wn) {
				t.Errorf("got %v, want %v first", g, wn)
			}
		}},
		testCase{"export/bad parameters are 400 naming each", func(t *testing.T, w *world) {
			w.fixture(tiesFixture())
			p := w.as(adminSecret)
			rows := []struct {
				params exportParams
				path   string
			}{
				{exportParams{EventSearchParams: params{Limit: "10"}}, "limit"},
				{exportParams{EventSearchParams: params{Offset: "0"}}, "offset"},
				{exportParams{EventSearchParams: params{After: "abc"}}, "after"},
				{exportParams{Format: "xml"}, "format"},
				{exportParams{Format: "CSV"}, "format"},
				{exportParams{AfterID: "-1"}, "afterId"},
				{exportParams{AfterID: "+1"}, "afterId"},
				{exportParams{AfterID: "1.0"}, "afterId"},
				{exportParams{AfterID: "99999999999999999999"}, "afterId"},
				{exportParams{EventSearchParams: params{Type: "no-such-type"}}, "type"},
				{exportParams{EventSearchParams: params{From: "IS:2025-02-30"}}, "from"},
			}
			for _, r := range rows {
				_, err := w.svc.ExportEvents(w.ctx, p, r.params)
				wantValidation(t, err, r.path)
			}
			_, err := w.svc.ExportEvents(w.ctx, p, exportParams{Format: "xml", AfterID: "x", EventSearchParams: params{Limit: "1"}})
			wantValidation(t, err, "format", "afterId", "limit")
			for _, f := range []string{"", "ndjson", "csv"} {
				exp, err := w.svc.ExportEvents(w.ctx, p, exportParams{Format: f})
				wantNoError(t, "format "+f, err)
				if want := cmp.Or(f, "ndjson"); string(exp.Format) != want {
					t.Errorf("format %q: got %q, want %q", f, exp.Format, want)
				}
			}
		}},
		testCase{"export/client and frontend tokens are refused", func(t *testing.T, w *world) {
			w.fixture(tiesFixture())
			for _, secret := range []string{clientSecret, frontendSecret} {
				_, err := w.svc.ExportEvents(w.ctx, w.as(secret), exportParams{})
				wantKind(t, "ExportEvents as "+secret, err, flagadmin.ErrNoAccess)
			}
		}},
	)
	return cases
}
