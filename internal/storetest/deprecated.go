package storetest

import (
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

type deprecatedReq = flagadmin.DeprecatedSearchRequest

// deprecatedCases run the deprecated body-based search over searchFixture
// with the admin token.
func deprecatedCases() []testCase {
	all := []string{"H", "E", "D", "C", "B", "A", "F", "G"}
	rows := []struct {
		name string
		req  flagadmin.DeprecatedSearchRequest
		want []string
		// total is the expected totalEvents; -1 means len(want).
		total int
	}{
		{"no filter lists every event newest first", deprecatedReq{}, all, -1},
		{"empty strings count as absent", deprecatedReq{Type: str(""), Project: str(""), Feature: str(""), Query: str("")}, all, -1},
		{"query matches the event type", deprecatedReq{Query: str("feature-created")}, []string{"D", "A"}, -1},
		{"query matches the creator case-insensitively", deprecatedReq{Query: str("EVE@EXAMPLE.COM")}, []string{"C", "B"}, -1},
		{"query matches a token name as creator", deprecatedReq{Query: str("ops-admin")}, []string{"E", "F"}, -1},
		{"query matches the system creator", deprecatedReq{Query: str("system")}, []string{"G"}, -1},
		{"query matches tags", deprecatedReq{Query: str("Checkout")}, []string{"A"}, -1},
		{"query matches preData", deprecatedReq{Query: str("legacy")}, []string{"E"}, -1},
		{"query matches data", deprecatedReq{Query: str("FLEXIBLEROLLOUT")}, []string{"C"}, -1},
		{"query percent is a literal character", deprecatedReq{Query: str("%")}, []string{"C"}, -1},
		{"query a_c does not match abc", deprecatedReq{Query: str("a_c")}, []string{"D"}, -1},
		{"query does not match the feature", deprecatedReq{Query: str("alpha")}, nil, -1},
		{"query does not match the project", deprecatedReq{Query: str("mobile")}, nil, -1},
		{"project is exact", deprecatedReq{Project: str("mobile")}, []string{"E", "D", "F"}, -1},
		{"project is case-sensitive", deprecatedReq{Project: str("Mobile")}, nil, -1},
		{"project is not a prefix match", deprecatedReq{Project: str("mob")}, nil, -1},
		{"project with a trailing space is another project", deprecatedReq{Project: str("mobile ")}, nil, -1},
		{"feature is accent-sensitive", deprecatedReq{Feature: str("alphä")}, nil, -1},
		{"query is case-insensitive beyond ASCII", deprecatedReq{Query: str("zÜrich")}, []string{"A"}, -1},
		{"feature is exact", deprecatedReq{Feature: str("alpha")}, []string{"C", "B", "A"}, -1},
		{"feature is case-sensitive", deprecatedReq{Feature: str("ALPHA")}, nil, -1},
		{"type", deprecatedReq{Type: str("feature-created")}, []string{"D", "A"}, -1},
		{"combined project and type", deprecatedReq{Project: str("default"), Type: str("feature-environment-enabled")}, []string{"B"}, -1},
		{"combined feature and query", deprecatedReq{Feature: str("beta"), Query: str("ops-admin")}, []string{"E"}, -1},
		{"limit", deprecatedReq{Limit: intp(2)}, []string{"H", "E"}, 8},
		{"limit 1 is allowed", deprecatedReq{Limit: intp(1)}, []string{"H"}, 8},
		{"limit 100 is allowed", deprecatedReq{Limit: intp(100)}, all, 8},
		{"offset skips matching rows", deprecatedReq{Offset: intp(2), Limit: intp(2)}, []string{"D", "C"}, 8},
		{"offset is a row count, not an event id", deprecatedReq{Offset: intp(7)}, []string{"G"}, 8},
		{"offset beyond the end gives an empty page with the total", deprecatedReq{Offset: intp(50)}, nil, 8},
		{"totalEvents counts the query too", deprecatedReq{Query: str("feature-created"), Limit: intp(1)}, []string{"D"}, 2},
		{"totalEvents counts every filter", deprecatedReq{Project: str("mobile"), Offset: intp(1), Limit: intp(1)}, []string{"D"}, 3},
	}
	var cases []testCase
	for _, r := range rows {
		cases = append(cases, testCase{"deprecated/" + r.name, func(t *testing.T, w *world) {
			w.fixture(searchFixture())
			total := r.total
			if total < 0 {
				total = len(r.want)
			}
			w.wantPage(t, w.deprecated(t, w.as(adminSecret), r.req), total, r.want...)
		}})
	}

	invalid := []struct {
		name string
		req  flagadmin.DeprecatedSearchRequest
		path string
	}{
		{"unknown type", deprecatedReq{Type: str("feature-exploded")}, "type"},
		{"type is case-sensitive", deprecatedReq{Type: str("Feature-Created")}, "type"},
		{"limit 0", deprecatedReq{Limit: intp(0)}, "limit"},
		{"limit 101", deprecatedReq{Limit: intp(101)}, "limit"},
		{"limit negative", deprecatedReq{Limit: intp(-1)}, "limit"},
		{"offset -1", deprecatedReq{Offset: intp(-1)}, "offset"},
	}
	for _, r := range invalid {
		cases = append(cases, testCase{"deprecated/validation/" + r.name, func(t *testing.T, w *world) {
			w.load(accounts())
			_, err := w.svc.DeprecatedSearchEvents(w.ctx, w.as(adminSecret), r.req)
			wantValidation(t, err, r.path)
		}})
	}

	cases = append(cases, testCase{"deprecated/default limit is 100", func(t *testing.T, w *world) {
		w.load(accounts(), bulkEvents(120)...)
		page := w.deprecated(t, w.as(adminSecret), deprecatedReq{})
		wantEqual(t, "events", len(page.Events), 100)
		wantEqual(t, "totalEvents", page.Total, 120)
		if len(page.Events) > 0 {
			wantEqual(t, "first event", w.eventNames(page.Events[:1])[0], "bulk-119")
			wantEqual(t, "last event", w.eventNames(page.Events[len(page.Events)-1:])[0], "bulk-20")
		}
	}})
	return cases
}
