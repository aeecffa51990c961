// Package unleashschema holds event JSON to Unleash's own schema of an
// event: eventSchema and tagSchema of the OpenAPI document unleash-server
// 8.2.0 serves (unleash-8.2.0-event-schema.json holds the two, as
// createOpenApiSchema of its openapi module returns them), read with
// OpenAPI 3.0's meaning, which is Unleash's: null is valid only where the
// schema says nullable, and a key the schema does not list is refused
// where it says additionalProperties false.
//
// It checks the keywords those two schemas use: type, nullable, required,
// properties, additionalProperties, items ($ref), enum, minimum,
// minLength, maxLength, pattern and the date-time format.
package unleashschema

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

//go:embed unleash-8.2.0-event-schema.json
var document []byte

// schema is the part of a JSON schema this package reads.
type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 string             `json:"type"`
	Nullable             bool               `json:"nullable"`
	Required             []string           `json:"required"`
	Properties           map[string]*schema `json:"properties"`
	AdditionalProperties *bool              `json:"additionalProperties"`
	Items                *schema            `json:"items"`
	Enum                 []string           `json:"enum"`
	Minimum              *float64           `json:"minimum"`
	MinLength            *int               `json:"minLength"`
	MaxLength            *int               `json:"maxLength"`
	Pattern              string             `json:"pattern"`
	Format               string             `json:"format"`
}

var schemas = func() map[string]*schema {
	var doc struct {
		Components struct {
			Schemas map[string]*schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(document, &doc); err != nil {
		panic("unleashschema: " + err.Error())
	}
	return doc.Components.Schemas
}()

// EventErrors returns what Unleash's eventSchema refuses in the JSON of
// one event, one message each, such as "groupType: null, and the schema
// does not allow null"; nil when the event is valid.
func EventErrors(event []byte) []string {
	dec := json.NewDecoder(strings.NewReader(string(event)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	var errs []string
	check(schemas["eventSchema"], "", v, &errs)
	return errs
}

// check appends to errs what s refuses in v, found at path.
func check(s *schema, path string, v any, errs *[]string) {
	if s.Ref != "" {
		name := strings.TrimPrefix(s.Ref, "#/components/schemas/")
		if s = schemas[name]; s == nil {
			panic("unleashschema: no schema " + name)
		}
	}
	fail := func(format string, args ...any) {
		*errs = append(*errs, fmt.Sprintf("%s: %s", or(path, "the event"), fmt.Sprintf(format, args...)))
	}
	if v == nil {
		if !s.Nullable {
			fail("null, and the schema does not allow null")
		}
		return
	}
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			fail("%T, want an object", v)
			return
		}
		for _, k := range s.Required {
			if _, ok := m[k]; !ok {
				fail("no %s, which is required", k)
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, ok := s.Properties[k]
			switch {
			case ok:
				check(p, join(path, k), m[k], errs)
			case s.AdditionalProperties != nil && !*s.AdditionalProperties:
				fail("%s is not a property of the schema", k)
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			fail("%T, want an array", v)
			return
		}
		for i, item := range a {
			check(s.Items, fmt.Sprintf("%s[%d]", path, i), item, errs)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			fail("%T, want a string", v)
			return
		}
		n := utf8.RuneCountInString(str)
		if s.MinLength != nil && n < *s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
			fail("%q is outside the length bounds", str)
		}
		if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(str) {
			fail("%q does not match %s", str, s.Pattern)
		}
		if s.Enum != nil && !slices.Contains(s.Enum, str) {
			fail("%q is not one of the schema's values", str)
		}
		if s.Format == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				fail("%q is not a date-time", str)
			}
		}
	case "integer", "number":
		num, ok := v.(json.Number)
		if !ok {
			fail("%T, want a number", v)
			return
		}
		f, err := num.Float64()
		if err != nil || s.Type == "integer" && strings.ContainsAny(num.String(), ".eE") {
			fail("%s is not an %s", num, s.Type)
			return
		}
		if s.Minimum != nil && f < *s.Minimum {
			fail("%s is below %v", num, *s.Minimum)
		}
	default:
		panic("unleashschema: type " + s.Type + " is not read here")
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func or(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}
