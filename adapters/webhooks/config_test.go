package webhooks_test

import (
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/webhooks"
	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestParseSinksAcceptsJSONAndYAML(t *testing.T) {
	want := []flagadmin.WebhookSink{
		{Name: "audit", URL: "https://hooks.example.com/a", Secret: "s1", Filter: flagadmin.EventSearchParams{Type: "IS:feature-completed", Project: "IS_ANY_OF:a,b"}},
		{Name: "all", URL: "http://127.0.0.1:9000/", Secret: "s2"},
	}
	docs := map[string]string{
		"json": `[{"name":"audit","url":"https://hooks.example.com/a","secret":"s1","filter":{"type":"IS:feature-completed","project":"IS_ANY_OF:a,b"}},
			{"name":"all","url":"http://127.0.0.1:9000/","secret":"s2"}]`,
		"yaml": `
- name: audit
  url: https://hooks.example.com/a
  secret: s1
  filter:
    type: IS:feature-completed
    project: IS_ANY_OF:a,b
- name: all
  url: http://127.0.0.1:9000/
  secret: s2
  filter: {}
`,
	}
	for format, doc := range docs {
		got, err := webhooks.ParseSinks(strings.NewReader(doc))
		if err != nil {
			t.Fatalf("%s: ParseSinks: %v", format, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: got %d sinks, want %d", format, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: sink %d: got %+v, want %+v", format, i, got[i], want[i])
			}
		}
	}
}

func TestParseSinksRejectsBadSinksNamingSinkAndField(t *testing.T) {
	cases := []struct {
		name, doc string
		want      []string // substrings of the one-line message
	}{
		{"not a list", `{"name":"a"}`, []string{"want a list of sinks"}},
		{"syntax", `[{"name": }`, []string{"not valid JSON or YAML"}},
		{"empty", ``, []string{"empty"}},
		{"no name", `[{"url":"http://x/","secret":"s"}]`, []string{"sink 1", "name: is required"}},
		{"duplicate name", `[{"name":"a","url":"http://x/","secret":"s"},{"name":"a","url":"http://y/","secret":"s"}]`, []string{`sink "a"`, "name:", "unique"}},
		{"ftp url", `[{"name":"a","url":"ftp://x/","secret":"s"}]`, []string{`sink "a"`, "url:", "http or https"}},
		{"no host", `[{"name":"a","url":"http:///path","secret":"s"}]`, []string{`sink "a"`, "url:"}},
		{"no url", `[{"name":"a","secret":"s"}]`, []string{`sink "a"`, "url: is required"}},
		{"no secret", `[{"name":"a","url":"http://x/"}]`, []string{`sink "a"`, "secret: is required"}},
		{"empty secret", `[{"name":"a","url":"http://x/","secret":""}]`, []string{`sink "a"`, "secret: is required"}},
		{"unknown key", `[{"name":"a","url":"http://x/","secret":"s","retries":3}]`, []string{`sink "a"`, `"retries": unknown field`}},
		{"bad filter value", `[{"name":"a","url":"http://x/","secret":"s","filter":{"type":"feature-completed"}}]`, []string{`sink "a"`, "filter.type"}},
		{"unknown filter", `[{"name":"a","url":"http://x/","secret":"s","filter":{"limit":"10"}}]`, []string{`sink "a"`, `"filter.limit": unknown filter parameter`}},
		{"bad date", `[{"name":"a","url":"http://x/","secret":"s","filter":{"from":"IS:2025-02-30"}}]`, []string{`sink "a"`, "filter.from"}},
		{"filter not object", `[{"name":"a","url":"http://x/","secret":"s","filter":"IS:x"}]`, []string{`sink "a"`, "filter: want an object"}},
		{"list value", `[{"name":"a","url":["http://x/"],"secret":"s"}]`, []string{`sink "a"`, "url: want a string"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := webhooks.ParseSinks(strings.NewReader(c.doc))
			if err == nil {
				t.Fatal("got no error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("message has several lines: %q", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("got %q, want it to contain %q", msg, w)
				}
			}
		})
	}
}
