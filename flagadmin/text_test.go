package flagadmin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestQuoteInput(t *testing.T) {
	long := strings.Repeat("a", flagadmin.MaxQuotedInput)
	tests := []struct{ name, in, want string }{
		{"short", "abc", `"abc"`},
		{"empty", "", `""`},
		{"exactly the maximum", long, `"` + long + `"`},
		{"one character over", long + "b", `"` + long + `"…`},
		{"characters, not bytes", strings.Repeat("é", 101), `"` + strings.Repeat("é", 100) + `"…`},
		{"NUL and invalid bytes escaped", "a\x00\xff", `"a\x00\xff"`},
		{"an invalid byte counts as one", strings.Repeat("\xff", 150), `"` + strings.Repeat(`\xff`, 100) + `"…`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := flagadmin.QuoteInput(tt.in); got != tt.want {
				t.Errorf("QuoteInput: got %s, want %s", got, tt.want)
			}
		})
	}
}

// badTexts are values that break the text rule: valid UTF-8, no NUL.
var badTexts = map[string]string{
	"NUL":                   "x\x00y",
	"invalid byte":          "x\xff",
	"overlong NUL encoding": "x\xc0\x80",
	"lone surrogate half":   "x\xed\xa0\x80",
	"truncated sequence":    "x\xe2\x82",
}

// TestParseRejectsBadText checks every parse function of caller text
// applies the rule: a *ValidationError naming the parameter.
func TestParseRejectsBadText(t *testing.T) {
	parses := []struct {
		name  string
		path  string
		parse func(s string) error
	}{
		{"filter", "feature", func(s string) error { _, err := flagadmin.ParseFilter("feature", "IS:"+s); return err }},
		{"IS_ANY_OF item", "project", func(s string) error { _, err := flagadmin.ParseFilter("project", "IS_ANY_OF:a,"+s); return err }},
		{"day", "from", func(s string) error { _, err := flagadmin.ParseDay("from", "IS:"+s); return err }},
		{"limit", "limit", func(s string) error { _, err := flagadmin.ParseLimit("limit", s, 50, 1000); return err }},
		{"offset", "offset", func(s string) error { _, err := flagadmin.ParseOffset("offset", s); return err }},
		{"archived", "archived", func(s string) error { _, err := flagadmin.ParseArchived(s); return err }},
		{"search query", "query", func(s string) error {
			_, err := flagadmin.ParseEventSearch(flagadmin.EventSearchParams{Query: s})
			return err
		}},
		{"search environment", "environment", func(s string) error {
			_, err := flagadmin.ParseEventSearch(flagadmin.EventSearchParams{Environment: "IS:" + s})
			return err
		}},
		{"search type", "type", func(s string) error {
			_, err := flagadmin.ParseEventSearch(flagadmin.EventSearchParams{Type: "IS:" + s})
			return err
		}},
		{"deprecated type", "type", func(s string) error {
			_, err := flagadmin.ParseDeprecatedSearch(flagadmin.DeprecatedSearchRequest{Type: &s})
			return err
		}},
		{"deprecated project", "project", func(s string) error {
			_, err := flagadmin.ParseDeprecatedSearch(flagadmin.DeprecatedSearchRequest{Project: &s})
			return err
		}},
		{"deprecated feature", "feature", func(s string) error {
			_, err := flagadmin.ParseDeprecatedSearch(flagadmin.DeprecatedSearchRequest{Feature: &s})
			return err
		}},
		{"deprecated query", "query", func(s string) error {
			_, err := flagadmin.ParseDeprecatedSearch(flagadmin.DeprecatedSearchRequest{Query: &s})
			return err
		}},
		{"statusValue", "statusValue", func(s string) error {
			return flagadmin.CompleteRequest{Status: "kept", StatusValue: &s}.Validate()
		}},
	}
	for _, p := range parses {
		for name, bad := range badTexts {
			t.Run(p.name+"/"+name, func(t *testing.T) {
				ve := wantValidation(t, p.parse(bad), p.path)
				if len(ve.Fields) != 1 {
					t.Errorf("got %d fields, want 1: %v", len(ve.Fields), ve)
				}
			})
		}
	}
}

// TestParseQuotesAtMost100Characters checks messages quoting the caller's
// input stay short whatever its size.
func TestParseQuotesAtMost100Characters(t *testing.T) {
	huge := strings.Repeat("z", 300_000)
	errs := map[string]error{}
	_, errs["filter"] = flagadmin.ParseFilter("feature", huge)
	_, errs["int filter"] = flagadmin.ParseEventSearch(flagadmin.EventSearchParams{ID: "IS:" + huge})
	_, errs["day"] = flagadmin.ParseDay("from", huge)
	_, errs["limit"] = flagadmin.ParseLimit("limit", huge, 50, 1000)
	_, errs["offset"] = flagadmin.ParseOffset("offset", huge)
	_, errs["archived"] = flagadmin.ParseArchived(huge)
	_, errs["event type"] = flagadmin.ParseEventSearch(flagadmin.EventSearchParams{Type: "IS:" + huge})
	_, errs["deprecated type"] = flagadmin.ParseDeprecatedSearch(flagadmin.DeprecatedSearchRequest{Type: &huge})
	for name, err := range errs {
		if err == nil {
			t.Errorf("%s: got no error", name)
			continue
		}
		if msg := err.Error(); len(msg) > 300 || !strings.Contains(msg, `"…`) {
			t.Errorf("%s: message of %d bytes, want under 300 with a cut quote: %.200s", name, len(msg), msg)
		}
	}
}

// guardedStore fails the test when the Service reaches storage with text
// the rule refuses: the rule must answer first, for every store.
type guardedStore struct {
	flagadmin.Store
	t *testing.T
}

func (g guardedStore) check(what string, texts ...string) {
	for _, s := range texts {
		for _, bad := range badTexts {
			if strings.Contains(s, bad) {
				g.t.Errorf("%s reached the store with %q", what, s)
			}
		}
	}
}

func (g guardedStore) Project(ctx context.Context, id string) (flagadmin.Project, error) {
	g.check("Project", id)
	return g.Store.Project(ctx, id)
}

func (g guardedStore) UpdateFeature(ctx context.Context, name string, fn func(*flagadmin.Feature) (*flagadmin.Event, error)) error {
	g.check("UpdateFeature", name)
	return g.Store.UpdateFeature(ctx, name, fn)
}

func (g guardedStore) SearchEvents(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	g.check("SearchEvents", append(append(append(q.Features, q.Projects...), q.Types...), q.Environments...)...)
	return g.Store.SearchEvents(ctx, q)
}

// TestServiceRejectsBadText calls the Service as an embedder would: text
// that breaks the rule is a *ValidationError naming the parameter, found
// before any storage work.
func TestServiceRejectsBadText(t *testing.T) {
	_, seeded := exampleService(t)
	svc := flagadmin.NewService(guardedStore{Store: seeded, t: t}, fixedClock(testNow))
	ctx := context.Background()
	admin := flagadmin.AdminToken("admin")
	kept := flagadmin.CompleteRequest{Status: flagadmin.StatusKept}
	calls := []struct {
		name, path string
		call       func(s string) error
	}{
		{"lifecycle projectId", "projectId", func(s string) error { return svc.CompleteLifecycle(ctx, admin, s, "new-checkout", kept) }},
		{"lifecycle featureName", "featureName", func(s string) error { return svc.CompleteLifecycle(ctx, admin, "default", s, kept) }},
		{"lifecycle statusValue", "statusValue", func(s string) error {
			return svc.CompleteLifecycle(ctx, admin, "default", "new-checkout", flagadmin.CompleteRequest{Status: "kept", StatusValue: &s})
		}},
		{"authorize projectId", "projectId", func(s string) error { _, err := svc.AuthorizeLifecycle(ctx, admin, s); return err }},
		{"service account id", "id", func(s string) error { return svc.DeleteServiceAccount(ctx, admin, s) }},
		{"search feature", "feature", func(s string) error {
			_, err := svc.SearchEvents(ctx, admin, flagadmin.EventSearchParams{Feature: "IS:" + s})
			return err
		}},
		{"search project", "project", func(s string) error {
			_, err := svc.SearchEvents(ctx, admin, flagadmin.EventSearchParams{Project: "IS_ANY_OF:default," + s})
			return err
		}},
		{"deprecated project", "project", func(s string) error {
			_, err := svc.DeprecatedSearchEvents(ctx, admin, flagadmin.DeprecatedSearchRequest{Project: &s})
			return err
		}},
		{"deprecated feature", "feature", func(s string) error {
			_, err := svc.DeprecatedSearchEvents(ctx, admin, flagadmin.DeprecatedSearchRequest{Feature: &s})
			return err
		}},
	}
	for _, c := range calls {
		for name, bad := range badTexts {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				wantValidation(t, c.call(bad), c.path)
			})
		}
	}
	// Valid text still reaches the store.
	if err := svc.CompleteLifecycle(ctx, admin, "default", "new-checkout", kept); err != nil {
		t.Errorf("a valid completion: %v", err)
	}
}
