package flagadmin_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestWebhookSinkValidation(t *testing.T) {
	ok := flagadmin.WebhookSink{Name: "audit", URL: "https://hooks.example.com/x", Secret: "s",
		Filter: flagadmin.EventSearchParams{Type: "IS:feature-completed", Project: "IS:billing"}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	q, err := ok.Query()
	if err != nil {
		t.Fatal(err)
	}
	// A sink sees events as an admin does: every project, none hidden.
	if q.RequireProject || len(q.HiddenProjects) > 0 || len(q.Types) != 1 || q.Projects[0] != "billing" || q.Limit != 0 {
		t.Errorf("Query: %+v", q)
	}
	cases := []struct {
		name   string
		change func(*flagadmin.WebhookSink)
		path   string
	}{
		{"no name", func(s *flagadmin.WebhookSink) { s.Name = "" }, "name"},
		{"relative url", func(s *flagadmin.WebhookSink) { s.URL = "/hook" }, "url"},
		{"file url", func(s *flagadmin.WebhookSink) { s.URL = "file:///etc/passwd" }, "url"},
		{"no secret", func(s *flagadmin.WebhookSink) { s.Secret = "" }, "secret"},
		{"bad id filter", func(s *flagadmin.WebhookSink) { s.Filter.ID = "IS:x" }, "filter.id"},
		{"limit", func(s *flagadmin.WebhookSink) { s.Filter.Limit = "5" }, "filter"},
	}
	for _, c := range cases {
		s := ok
		c.change(&s)
		err := s.Validate()
		var ve *flagadmin.ValidationError
		if !errors.As(err, &ve) || ve.Fields[0].Path != c.path {
			t.Errorf("%s: got %v, want a validation error of %s", c.name, err, c.path)
		}
	}
	err = flagadmin.ValidateWebhookSinks([]flagadmin.WebhookSink{ok, ok})
	var se *flagadmin.SinkConfigError
	if !errors.As(err, &se) || se.Index != 1 || !strings.HasPrefix(err.Error(), `sink "audit": name:`) {
		t.Errorf("duplicate names: got %v", err)
	}
}
