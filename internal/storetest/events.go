package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/eventjson"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/eventtest"
	"github.com/flagadmin/flagadmin/internal/unleashschema"
)

// searchFixture is the world of the search cases: eight events A to H over
// projects default and mobile. Newest first they are H E D C B A F G; B and C
// share a timestamp, so C (inserted later) comes before B.
//
//	A feature-created            default alpha  -           ada (1)      tags [simple:Checkout]
//	B feature-environment-enabled default alpha production  eve (2)      group 7
//	C feature-strategy-add       default alpha  production  eve (2)      group 7, data has "50%"
//	D feature-created            mobile  beta   development ci-bot (10)  data has "a_c"
//	E feature-stale-on           mobile  beta   development ops-admin (-42) group 01M8…, preData "ABC Legacy"
//	F project-created            mobile  -      -           ops-admin (-42)
//	G user-created               -       -      -           system (no id)
//	H segment-created            -       -      production  ada (1)      no data
func searchFixture() (*flagadmin.Seed, []namedEvent) {
	seed := accounts()
	seed.Projects = []flagadmin.Project{
		{ID: "default", Name: "Default"},
		{ID: "mobile", Name: "Mobile"},
	}
	def, mob := str("default"), str("mobile")
	alpha, beta := str("alpha"), str("beta")
	prod, dev := str("production"), str("development")
	a := ev(flagadmin.EventFeatureCreated, "ada@example.com", i64(adaID), "2025-03-01T10:00:00Z", def, alpha, nil, `{"description": "first flag", "city": "Zürich"}`)
	a.Tags = []flagadmin.Tag{{Type: "simple", Value: "Checkout"}}
	b := ev(flagadmin.EventFeatureEnvironmentEnabled, "eve@example.com", i64(eveID), "2025-03-02T10:00:00Z", def, alpha, prod, `{"enabled": true}`)
	b.GroupType, b.GroupID = str("transaction"), str("7")
	c := ev(flagadmin.EventFeatureStrategyAdd, "eve@example.com", i64(eveID), "2025-03-02T10:00:00Z", def, alpha, prod, `{"strategy": "flexibleRollout", "rollout": "50%"}`)
	c.GroupType, c.GroupID = str("transaction"), str("7")
	d := ev(flagadmin.EventFeatureCreated, "ci-bot", i64(ciID), "2025-03-03T10:00:00Z", mob, beta, dev, `{"description": "pattern a_c"}`)
	e := ev(flagadmin.EventFeatureStaleOn, adminTokenName, i64(flagadmin.AdminTokenUserID), "2025-03-04T10:00:00Z", mob, beta, dev, `{"stale": true}`)
	e.GroupType, e.GroupID = str("transaction"), str("01M8564MBTV5HMX3GH6SHGBVKG")
	e.PreData = json.RawMessage(`{"stale": false, "note": "ABC Legacy"}`)
	f := ev(flagadmin.EventProjectCreated, adminTokenName, i64(flagadmin.AdminTokenUserID), "2025-02-28T10:00:00Z", mob, nil, nil, `{"mode": "open"}`)
	g := ev(flagadmin.EventUserCreated, "system", nil, "2025-02-27T10:00:00Z", nil, nil, nil, `{"email": "new@example.com"}`)
	h := ev(flagadmin.EventSegmentCreated, "ada@example.com", i64(adaID), "2025-03-05T10:00:00Z", nil, nil, prod, "")
	return seed, []namedEvent{{"A", a}, {"B", b}, {"C", c}, {"D", d}, {"E", e}, {"F", f}, {"G", g}, {"H", h}}
}

// searchCase is a query-string search over searchFixture by the admin token.
// {name} in a parameter stands for the id of the fixture event name.
type searchCase struct {
	name   string
	params flagadmin.EventSearchParams
	want   []string
	// total is the expected total; -1 means len(want).
	total int
}

type params = flagadmin.EventSearchParams

func eventCases() []testCase {
	all := []string{"H", "E", "D", "C", "B", "A", "F", "G"}
	rows := []searchCase{
		{"order/all events newest first, equal times by id descending", params{}, all, -1},

		{"filter/feature IS", params{Feature: "IS:alpha"}, []string{"C", "B", "A"}, -1},
		{"filter/feature IS_ANY_OF", params{Feature: "IS_ANY_OF:alpha,beta"}, []string{"E", "D", "C", "B", "A"}, -1},
		{"filter/feature IS with several values means IS_ANY_OF", params{Feature: "IS:alpha,beta"}, []string{"E", "D", "C", "B", "A"}, -1},
		{"filter/feature items are trimmed", params{Feature: "IS_ANY_OF: beta , alpha "}, []string{"E", "D", "C", "B", "A"}, -1},
		{"filter/feature is case-sensitive", params{Feature: "IS:ALPHA"}, nil, -1},
		{"filter/feature unknown matches nothing", params{Feature: "IS:gamma"}, nil, -1},
		{"filter/project IS", params{Project: "IS:mobile"}, []string{"E", "D", "F"}, -1},
		{"filter/project IS_ANY_OF", params{Project: "IS_ANY_OF:default,mobile"}, []string{"E", "D", "C", "B", "A", "F"}, -1},
		{"filter/project is case-sensitive", params{Project: "IS:Mobile"}, nil, -1},
		{"filter/type IS", params{Type: "IS:feature-created"}, []string{"D", "A"}, -1},
		{"filter/type IS_ANY_OF", params{Type: "IS_ANY_OF:feature-created,project-created"}, []string{"D", "A", "F"}, -1},
		{"filter/createdBy IS", params{CreatedBy: "IS:2"}, []string{"C", "B"}, -1},
		{"filter/createdBy IS admin token id -42", params{CreatedBy: "IS:-42"}, []string{"E", "F"}, -1},
		{"filter/createdBy IS_ANY_OF", params{CreatedBy: "IS_ANY_OF:1,10"}, []string{"H", "D", "A"}, -1},
		{"filter/environment IS", params{Environment: "IS:production"}, []string{"H", "C", "B"}, -1},
		{"filter/environment IS_ANY_OF", params{Environment: "IS_ANY_OF:production,development"}, []string{"H", "E", "D", "C", "B"}, -1},
		{"filter/id IS", params{ID: "IS:{B}"}, []string{"B"}, -1},
		{"filter/id IS_ANY_OF", params{ID: "IS_ANY_OF:{A},{E},{G}"}, []string{"E", "A", "G"}, -1},
		{"filter/groupId IS", params{GroupID: "IS:7"}, []string{"C", "B"}, -1},
		{"filter/groupId IS_ANY_OF", params{GroupID: "IS_ANY_OF:7,01M8564MBTV5HMX3GH6SHGBVKG"}, []string{"E", "C", "B"}, -1},
		{"filter/groupId is exact", params{GroupID: "IS_ANY_OF:07,01m8564mbtv5hmx3gh6shgbvkg"}, nil, -1},
		{"filter/type not listed by the contract matches no event here", params{Type: "IS:release-plan-added"}, nil, -1},
		{"filter/combined project and environment", params{Project: "IS:default", Environment: "IS:production"}, []string{"C", "B"}, -1},
		{"filter/combined feature and type", params{Feature: "IS:alpha", Type: "IS:feature-created"}, []string{"A"}, -1},
		{"filter/combined createdBy, groupId and type", params{CreatedBy: "IS:2", GroupID: "IS:7", Type: "IS:feature-strategy-add"}, []string{"C"}, -1},
		{"filter/combined filters without a common match", params{Project: "IS:default", Feature: "IS:beta"}, nil, -1},
		{"filter/combined project and query", params{Project: "IS:mobile", Query: "legacy"}, []string{"E"}, -1},
		{"filter/combined project and from", params{Project: "IS:mobile", From: "IS:2025-03-04"}, []string{"E"}, -1},

		{"null/project IS:null matches no project-less event", params{Project: "IS:null"}, nil, -1},
		{"null/feature filter never matches a null feature", params{Feature: "IS_ANY_OF:alpha,null"}, []string{"C", "B", "A"}, -1},
		{"null/createdBy filter never matches a null creator id", params{CreatedBy: "IS_ANY_OF:1,2,10,-42"}, []string{"H", "E", "D", "C", "B", "A", "F"}, -1},
		{"null/environment filter never matches a null environment", params{Environment: "IS_ANY_OF:production,development,null"}, []string{"H", "E", "D", "C", "B"}, -1},
		{"null/groupId filter never matches a null group", params{GroupID: "IS_ANY_OF:null,7,01M8564MBTV5HMX3GH6SHGBVKG"}, []string{"E", "C", "B"}, -1},

		{"query/matches tags", params{Query: "checkout"}, []string{"A"}, -1},
		{"query/is case-insensitive", params{Query: "CHECKOUT"}, []string{"A"}, -1},
		{"query/matches preData", params{Query: "LEGACY"}, []string{"E"}, -1},
		{"query/matches data", params{Query: "flexiblerollout"}, []string{"C"}, -1},
		{"query/matches the compact JSON text", params{Query: `"stale":false`}, []string{"E"}, -1},
		{"query/matches JSON literals", params{Query: "true"}, []string{"E", "B"}, -1},
		{"query/matches the JSON text in its written key order", params{Query: `false,"note"`}, []string{"E"}, -1},
		{"query/is case-insensitive beyond ASCII", params{Query: "ZÜRICH"}, []string{"A"}, -1},
		{"query/percent is a literal character", params{Query: "%"}, []string{"C"}, -1},
		{"query/percent inside text is literal", params{Query: "50%"}, []string{"C"}, -1},
		{"query/underscore is a literal character", params{Query: "_"}, []string{"D"}, -1},
		{"query/a_c does not match abc", params{Query: "a_c"}, []string{"D"}, -1},
		{"query/does not match the type", params{Query: "feature-created"}, nil, -1},
		{"query/does not match the creator", params{Query: "eve@example.com"}, nil, -1},
		{"query/does not match the feature", params{Query: "alpha"}, nil, -1},
		{"query/does not match the project", params{Query: "mobile"}, nil, -1},
		{"query/does not match the environment", params{Query: "production"}, nil, -1},

		{"paging/limit", params{Limit: "3"}, []string{"H", "E", "D"}, 8},
		{"paging/limit 1", params{Limit: "1"}, []string{"H"}, 8},
		{"paging/limit 1000 is allowed", params{Limit: "1000"}, all, 8},
		{"paging/offset and limit", params{Offset: "3", Limit: "3"}, []string{"C", "B", "A"}, 8},
		{"paging/offset splits events of equal time by id", params{Offset: "4", Limit: "1"}, []string{"B"}, 8},
		{"paging/last partial page", params{Offset: "6", Limit: "3"}, []string{"F", "G"}, 8},
		{"paging/offset at the end gives an empty page with the total", params{Offset: "8"}, nil, 8},
		{"paging/offset beyond the end gives an empty page with the total", params{Offset: "100", Limit: "5"}, nil, 8},
		{"paging/the largest offset gives an empty page with the total", params{Offset: "9223372036854775807", Limit: "1000"}, nil, 8},
		{"paging/the largest offset with a filter of several values", params{Project: "IS_ANY_OF:default,mobile", Offset: "9223372036854775807"}, nil, 6},
		{"paging/total counts filter matches, not the page", params{Project: "IS:default", Offset: "1", Limit: "1"}, []string{"B"}, 3},
	}
	var cases []testCase
	for _, r := range rows {
		cases = append(cases, testCase{"events/" + r.name, func(t *testing.T, w *world) {
			w.fixture(searchFixture())
			p := r.params
			p.ID, p.GroupID = w.expand(p.ID), w.expand(p.GroupID)
			total := r.total
			if total < 0 {
				total = len(r.want)
			}
			w.wantPage(t, w.search(t, w.as(adminSecret), p), total, r.want...)
		}})
	}
	cases = append(cases, dateCases()...)
	cases = append(cases, eventValidationCases()...)
	cases = append(cases,
		testCase{"events/empty store gives an empty page", func(t *testing.T, w *world) {
			w.load(accounts())
			w.wantPage(t, w.search(t, w.as(adminSecret), params{}), 0)
		}},
		testCase{"events/paging/default limit is 50", func(t *testing.T, w *world) {
			w.load(accounts(), bulkEvents(60)...)
			page := w.search(t, w.as(adminSecret), params{})
			wantEqual(t, "events", len(page.Events), 50)
			wantEqual(t, "total", page.Total, 60)
			if len(page.Events) > 0 {
				wantEqual(t, "first event", w.eventNames(page.Events[:1])[0], "bulk-59")
				wantEqual(t, "last event", w.eventNames(page.Events[len(page.Events)-1:])[0], "bulk-10")
			}
		}},
		testCase{"events/order/equal timestamps by id descending across pages", func(t *testing.T, w *world) {
			var evs []namedEvent
			for i := range 5 {
				evs = append(evs, namedEvent{fmt.Sprintf("tie-%d", i), ev(flagadmin.EventFeatureUpdated, "system", nil, "2025-06-01T08:00:00.500Z", str("default"), nil, nil, "")})
			}
			evs = append(evs, namedEvent{"later-by-1ms", ev(flagadmin.EventFeatureUpdated, "system", nil, "2025-06-01T08:00:00.501Z", str("default"), nil, nil, "")})
			evs = append(evs, namedEvent{"earlier-by-1ms", ev(flagadmin.EventFeatureUpdated, "system", nil, "2025-06-01T08:00:00.499Z", str("default"), nil, nil, "")})
			w.load(accounts(), evs...)
			admin := w.as(adminSecret)
			w.wantPage(t, w.search(t, admin, params{}), 7, "later-by-1ms", "tie-4", "tie-3", "tie-2", "tie-1", "tie-0", "earlier-by-1ms")
			w.wantPage(t, w.search(t, admin, params{Offset: "2", Limit: "2"}), 7, "tie-3", "tie-2")
		}},
		testCase{"events/stored fields round-trip", func(t *testing.T, w *world) {
			e := ev(flagadmin.EventFeatureStrategyUpdate, "eve@example.com", i64(eveID), "2025-07-04T05:06:07.089+02:00", str("default"), str("alpha"), str("production"),
				`{"strategy": {"name": "flexibleRollout", "rollout": 25, "nested": [1, "two", null, {"deep": "Ünïcødé ✓"}]}}`)
			e.PreData = json.RawMessage(`{"strategy": {"rollout": 10}}`)
			e.Tags = []flagadmin.Tag{{Type: "simple", Value: "checkout"}, {Type: "team", Value: "payments"}}
			e.GroupType, e.GroupID = str("transaction"), str("01M8564MBTV5HMX3GH6SHGBVKG")
			plain := ev(flagadmin.EventUserCreated, "system", nil, "2025-07-05T00:00:00Z", nil, nil, nil, "")
			w.load(accounts(), namedEvent{"rich", e}, namedEvent{"plain", plain})
			page := w.search(t, w.as(adminSecret), params{ID: w.expand("IS_ANY_OF:{rich},{plain}")})
			w.wantPage(t, page, 2, "plain", "rich")
			if len(page.Events) != 2 {
				return
			}
			got, bare := page.Events[1], page.Events[0]
			wantEqual(t, "createdAt", got.CreatedAt.Format(time.RFC3339Nano), "2025-07-04T03:06:07.089Z")
			wantEqual(t, "createdAt location", got.CreatedAt.Location(), time.UTC)
			wantEqual(t, "type", got.Type, flagadmin.EventFeatureStrategyUpdate)
			wantEqual(t, "createdBy", got.CreatedBy, "eve@example.com")
			wantEqual(t, "createdByUserId", fmtPtr(got.CreatedByUserID), "2")
			wantEqual(t, "environment", fmtPtr(got.Environment), "production")
			wantEqual(t, "project", fmtPtr(got.Project), "default")
			wantEqual(t, "featureName", fmtPtr(got.FeatureName), "alpha")
			wantEqual(t, "groupType", fmtPtr(got.GroupType), "transaction")
			wantEqual(t, "groupId", fmtPtr(got.GroupID), "01M8564MBTV5HMX3GH6SHGBVKG")
			wantJSON(t, "data", got.Data, `{"strategy": {"name": "flexibleRollout", "rollout": 25, "nested": [1, "two", null, {"deep": "Ünïcødé ✓"}]}}`)
			wantJSON(t, "preData", got.PreData, `{"strategy": {"rollout": 10}}`)
			wantEqual(t, "tags", fmt.Sprint(got.Tags), "[{checkout simple} {payments team}]")
			wantEqual(t, "plain createdByUserId", fmtPtr(bare.CreatedByUserID), "null")
			wantEqual(t, "plain environment", fmtPtr(bare.Environment), "null")
			wantEqual(t, "plain project", fmtPtr(bare.Project), "null")
			wantEqual(t, "plain featureName", fmtPtr(bare.FeatureName), "null")
			wantEqual(t, "plain groupType", fmtPtr(bare.GroupType), "null")
			wantEqual(t, "plain groupId", fmtPtr(bare.GroupID), "null")
			wantJSON(t, "plain data", bare.Data, "null")
			wantJSON(t, "plain preData", bare.PreData, "null")
			wantEqual(t, "plain tags", len(bare.Tags), 0)
		}},
		testCase{"events/served JSON: group keys only when grouped, tag colors kept, valid for Unleash's eventSchema", func(t *testing.T, w *world) {
			// As Unleash 8.2.0 answers: groupType and groupId left out of
			// an event of no group (its eventSchema refuses null there),
			// and a tag's color kept as Unleash wrote it (a string, null,
			// or no key), on every way a store gives events back.
			grouped := ev(flagadmin.EventFeatureUntagged, "eve@example.com", i64(eveID), "2025-07-06T00:00:00Z", str("default"), str("alpha"), nil, "")
			grouped.PreData = json.RawMessage(`{"type":"area","value":"web"}`)
			grouped.Tags = []flagadmin.Tag{{Type: "area", Value: "web", Color: flagadmin.ColorOf("#34A853")}, {Type: "team", Value: "growth", Color: flagadmin.NullColor}}
			grouped.GroupType, grouped.GroupID = str("transaction"), str("01M8565GQB3V82G1290YFBVC94")
			ungrouped := ev(flagadmin.EventFeatureCompleted, "admin", i64(flagadmin.AdminTokenUserID), "2025-07-07T00:00:00Z", str("default"), str("alpha"), nil, `{"status":"kept","kept":true}`)
			ungrouped.Tags = []flagadmin.Tag{{Type: "area", Value: "web"}}
			w.load(accounts(), namedEvent{"grouped", grouped}, namedEvent{"ungrouped", ungrouped})
			admin := w.as(adminSecret)
			wantTags := map[string]string{
				"grouped":   `"tags":[{"type":"area","value":"web","color":"#34A853"},{"type":"team","value":"growth","color":null}]`,
				"ungrouped": `"tags":[{"value":"web","type":"area"}]`,
			}
			for _, way := range []struct {
				name   string
				events []flagadmin.Event
			}{
				{"search", w.search(t, admin, params{}).Events},
				{"deprecated search", w.deprecated(t, admin, flagadmin.DeprecatedSearchRequest{}).Events},
				{"export", w.export(t, admin, exportParams{})},
			} {
				names := w.eventNames(way.events)
				if len(names) != 2 {
					t.Fatalf("%s: got %q, want the two events", way.name, names)
				}
				for i, e := range way.events {
					served := eventjson.AppendEvent(nil, &e)
					var keys map[string]json.RawMessage
					if err := json.Unmarshal(served, &keys); err != nil {
						t.Fatal(err)
					}
					_, hasType := keys["groupType"]
					_, hasID := keys["groupId"]
					if grouped := names[i] == "grouped"; hasType != grouped || hasID != grouped {
						t.Errorf("%s: %s: groupType there %v, groupId there %v, want both %v: %s", way.name, names[i], hasType, hasID, grouped, served)
					}
					if !strings.Contains(string(served), wantTags[names[i]]) {
						t.Errorf("%s: %s: got %s, want %s", way.name, names[i], served, wantTags[names[i]])
					}
					if errs := unleashschema.EventErrors(served); errs != nil {
						t.Errorf("%s: %s: Unleash's eventSchema refuses %s: %q", way.name, names[i], served, errs)
					}
				}
			}
		}},
		testCase{"events/every declared field round-trips through search and export", func(t *testing.T, w *world) {
			// Every field of flagadmin.Event set (eventtest.Full): a field a
			// store's row mapping forgets, on the way in or out, fails here.
			full := eventtest.Full(t)
			full.ID = 0
			w.load(accounts(), namedEvent{"full", full})
			admin := w.as(adminSecret)
			page := w.search(t, admin, params{})
			w.wantPage(t, page, 1, "full")
			for _, got := range page.Events {
				if d := eventtest.Diff(full, got, "id"); d != nil {
					t.Errorf("SearchEvents lost fields:\n%s", strings.Join(d, "\n"))
				}
			}
			for _, got := range w.export(t, admin, exportParams{}) {
				if d := eventtest.Diff(full, got, "id"); d != nil {
					t.Errorf("ExportEvents lost fields:\n%s", strings.Join(d, "\n"))
				}
			}
		}},
	)
	return cases
}

// bulkEvents returns n events bulk-0 .. bulk-(n-1), one minute apart, oldest first.
func bulkEvents(n int) []namedEvent {
	start := at("2025-01-01T00:00:00Z")
	out := make([]namedEvent, n)
	for i := range n {
		e := ev(flagadmin.EventFeatureUpdated, "system", nil, "2025-01-01T00:00:00Z", str("default"), nil, nil, fmt.Sprintf(`{"n": %d}`, i))
		e.CreatedAt = start.Add(time.Duration(i) * time.Minute)
		out[i] = namedEvent{fmt.Sprintf("bulk-%d", i), e}
	}
	return out
}

// dateCases check from/to at the exact UTC day boundaries.
func dateCases() []testCase {
	fixture := func() []namedEvent {
		e := func(name, createdAt string) namedEvent {
			return namedEvent{name, ev(flagadmin.EventFeatureUpdated, "system", nil, createdAt, str("default"), nil, nil, "")}
		}
		return []namedEvent{
			e("prev-last", "2025-05-09T23:59:59.999Z"),
			e("from-first", "2025-05-10T00:00:00.000Z"),
			e("zoned", "2025-05-10T01:30:00+02:00"), // 2025-05-09T23:30:00Z
			e("to-last", "2025-05-12T23:59:59.999Z"),
			e("next-first", "2025-05-13T00:00:00.000Z"),
		}
	}
	rows := []struct {
		name     string
		from, to string
		want     []string
	}{
		{"from and to are inclusive UTC days", "IS:2025-05-10", "IS:2025-05-12", []string{"to-last", "from-first"}},
		{"from alone starts at midnight UTC", "IS:2025-05-10", "", []string{"next-first", "to-last", "from-first"}},
		{"to alone ends before the next midnight UTC", "", "IS:2025-05-12", []string{"to-last", "from-first", "prev-last", "zoned"}},
		{"from and to on the same day", "IS:2025-05-10", "IS:2025-05-10", []string{"from-first"}},
		{"an offset time counts in its UTC day", "IS:2025-05-09", "IS:2025-05-09", []string{"prev-last", "zoned"}},
		{"next day starts at 00:00:00.000", "IS:2025-05-13", "IS:2025-05-13", []string{"next-first"}},
		{"leap day is a calendar date", "IS:2024-02-29", "", []string{"next-first", "to-last", "from-first", "prev-last", "zoned"}},
	}
	var cases []testCase
	for _, r := range rows {
		cases = append(cases, testCase{"events/dates/" + r.name, func(t *testing.T, w *world) {
			w.load(accounts(), fixture()...)
			w.wantPage(t, w.search(t, w.as(adminSecret), params{From: r.from, To: r.to}), len(r.want), r.want...)
		}})
	}
	return cases
}

// eventValidationCases check that bad parameters are ErrValidation naming them.
func eventValidationCases() []testCase {
	rows := []struct {
		name   string
		params flagadmin.EventSearchParams
		paths  []string
	}{
		{"feature without operator", params{Feature: "alpha"}, []string{"feature"}},
		{"feature with lower-case operator", params{Feature: "is:alpha"}, []string{"feature"}},
		{"feature with unknown operator", params{Feature: "EQ:alpha"}, []string{"feature"}},
		{"project with empty IS:", params{Project: "IS:"}, []string{"project"}},
		{"type with only empty items", params{Type: "IS_ANY_OF: , ,"}, []string{"type"}},
		{"environment without operator", params{Environment: "production"}, []string{"environment"}},
		{"createdBy not an integer", params{CreatedBy: "IS:eve"}, []string{"createdBy"}},
		{"createdBy with one bad item", params{CreatedBy: "IS_ANY_OF:1,two"}, []string{"createdBy"}},
		{"id not an integer", params{ID: "IS:1.5"}, []string{"id"}},
		{"groupId with empty IS:", params{GroupID: "IS:"}, []string{"groupId"}},
		{"type longer than 255 characters", params{Type: "IS:" + strings.Repeat("x", 256)}, []string{"type"}},
		{"from 2025-02-30 is not a date", params{From: "IS:2025-02-30"}, []string{"from"}},
		{"to month 13 is not a date", params{To: "IS:2025-13-01"}, []string{"to"}},
		{"from 2025-02-29 is not a date", params{From: "IS:2025-02-29"}, []string{"from"}},
		{"from without IS:", params{From: "2025-03-01"}, []string{"from"}},
		{"to without zero padding", params{To: "IS:2025-3-1"}, []string{"to"}},
		{"to with a time", params{To: "IS:2025-03-01T00:00:00Z"}, []string{"to"}},
		{"limit 0", params{Limit: "0"}, []string{"limit"}},
		{"limit 1001", params{Limit: "1001"}, []string{"limit"}},
		{"limit abc", params{Limit: "abc"}, []string{"limit"}},
		{"limit negative", params{Limit: "-5"}, []string{"limit"}},
		{"limit fraction", params{Limit: "1.5"}, []string{"limit"}},
		{"offset -1", params{Offset: "-1"}, []string{"offset"}},
		{"offset not a number", params{Offset: "x"}, []string{"offset"}},
		{"every bad parameter is named", params{Feature: "alpha", CreatedBy: "IS:x", Limit: "0", Offset: "-1"}, []string{"feature", "createdBy", "limit", "offset"}},
	}
	var cases []testCase
	for _, r := range rows {
		cases = append(cases, testCase{"events/validation/" + r.name, func(t *testing.T, w *world) {
			w.load(accounts())
			page, err := w.svc.SearchEvents(w.ctx, w.as(adminSecret), r.params)
			wantValidation(t, err, r.paths...)
			if err == nil {
				t.Errorf("got %d events, want none with an error", len(page.Events))
			}
		}})
	}
	return cases
}
