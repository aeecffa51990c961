package unleashschema_test

import (
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/internal/unleashschema"
)

// unleashEvents are the three events unleash-server 8.2.0 answered to
// GET /api/admin/search/events?id=IS_ANY_OF:1,500,2296 on a real
// installation, verbatim: grouped, ungrouped with colored tags, and one
// written by a migration.
var unleashEvents = []string{
	`{"id":2296,"type":"api-token-created","createdBy":"admin","createdAt":"2026-11-23T21:49:11.065Z","createdByUserId":-42,"data":{"tokenName":"edge-proxy-secure","type":"backend","projects":["default"],"project":"default","environment":"production","createdAt":"2026-11-23T21:49:11.065Z","secure":true,"selector":"5LLteYcevhm_5mpvsMJ_5g","tokenVersion":2},"preData":null,"tags":[],"featureName":null,"project":"default","environment":"production","groupType":"transaction","groupId":"01M8564T0TNH5P99XYAG45YAR9","label":"API token created","summary":"**admin** created API token ****"}`,
	`{"id":500,"type":"feature-untagged","createdBy":"bob.editor@example.com","createdAt":"2026-11-23T21:48:14.657Z","createdByUserId":3,"data":null,"preData":{"type":"simple","value":"needs-review"},"tags":[{"type":"simple","value":"needs-review","color":"#FFFFFF"},{"type":"team","value":"checkout","color":"#1A73E8"}],"featureName":"free-shipping-threshold","project":"default","environment":null,"label":"Flag untagged","summary":"**bob.editor@example.com** untagged **[free-shipping-threshold](http://127.0.0.1:4260/projects/default/features/free-shipping-threshold)** with **simple:needs-review** in project **[default](http://127.0.0.1:4260/projects/default)**"}`,
	`{"id":1,"type":"strategy-created","createdBy":"migration","createdAt":"2026-11-23T21:48:01.987Z","createdByUserId":null,"data":{"name":"default","description":"Default on or off Strategy."},"preData":null,"tags":[],"featureName":null,"project":null,"environment":null,"label":"strategy-created","summary":"**migration** triggered **strategy-created**"}`,
}

// TestUnleashEventsAreValid: Unleash's own answers pass its schema.
func TestUnleashEventsAreValid(t *testing.T) {
	for _, e := range unleashEvents {
		if errs := unleashschema.EventErrors([]byte(e)); errs != nil {
			t.Errorf("%.60s...: %q", e, errs)
		}
	}
}

// TestEventErrorsRefuse: what the schema refuses is reported, naming the key.
func TestEventErrorsRefuse(t *testing.T) {
	ungrouped := unleashEvents[2]
	for _, c := range []struct{ name, from, to, want string }{
		{"a null groupType", `"project":null`, `"project":null,"groupType":null`, "groupType: null"},
		{"a null groupId", `"project":null`, `"project":null,"groupId":null`, "groupId: null"},
		{"a key of no property", `"project":null`, `"project":null,"color":"x"`, "color is not a property"},
		{"no id", `"id":1,`, ``, "no id, which is required"},
		{"an id of 0", `"id":1,`, `"id":0,`, "id: 0 is below 1"},
		{"a fractional id", `"id":1,`, `"id":1.5,`, "id: 1.5 is not an integer"},
		{"an unknown type", `"strategy-created"`, `"no-such-type"`, "type: \"no-such-type\" is not one"},
		{"a bad date", `"2026-11-23T21:48:01.987Z"`, `"yesterday"`, "createdAt: \"yesterday\" is not a date-time"},
		{"a tag color not #RRGGBB", `"tags":[]`, `"tags":[{"value":"web","type":"area","color":"green"}]`, "tags[0].color: \"green\" does not match"},
		{"a tag of one character", `"tags":[]`, `"tags":[{"value":"w","type":"area"}]`, "tags[0].value: \"w\" is outside"},
		{"a tag key of no property", `"tags":[]`, `"tags":[{"value":"web","type":"area","colour":null}]`, "tags[0]: colour is not a property"},
	} {
		if !strings.Contains(ungrouped, c.from) {
			t.Fatalf("%s: the event has no %s", c.name, c.from)
		}
		errs := unleashschema.EventErrors([]byte(strings.Replace(ungrouped, c.from, c.to, 1)))
		if len(errs) != 1 || !strings.Contains(errs[0], c.want) {
			t.Errorf("%s: got %q, want one error with %q", c.name, errs, c.want)
		}
	}
}
