package flagadmin

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// SearchTexts returns the lower-cased texts a free-text query is matched
// against, computed once when an event is written:
//
//   - payload: the compact JSON of data, preData and tags (each when present,
//     tags when non-empty), joined by newlines, with \uXXXX escapes written
//     as the characters they stand for (see unescapeJSON). The query-string
//     search matches only this.
//   - meta: the type and createdBy, joined by a newline. The deprecated
//     search matches this too.
//
// Queries cannot contain control characters, so a match never spans the
// newline between two texts. Stores keep both texts beside the event and
// match them as literal substrings of the lower-cased query.
func SearchTexts(e Event) (payload, meta string) {
	var b strings.Builder
	add := func(raw []byte) {
		if len(raw) == 0 {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.Write(raw)
	}
	add(unescapeJSON(compactJSON(e.Data)))
	add(unescapeJSON(compactJSON(e.PreData)))
	if len(e.Tags) > 0 {
		tags, _ := json.Marshal(e.Tags)
		add(unescapeJSON(tags))
	}
	return strings.ToLower(b.String()), strings.ToLower(e.Type + "\n" + e.CreatedBy)
}

// unescapeJSON writes the \uXXXX escapes in the strings of JSON text as the
// characters they stand for (except quotes, backslashes and control
// characters, which stay escaped), so that a query finds "r&d" however the
// JSON was escaped: encoding/json writes & < > as \u0026 \u003c \u003e.
func unescapeJSON(raw []byte) []byte {
	if !bytes.Contains(raw, []byte(`\u`)) {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 == len(raw) {
			out = append(out, raw[i])
			continue
		}
		if raw[i+1] != 'u' {
			out = append(out, raw[i], raw[i+1]) // \" \\ \n ...: keep as written
			i++
			continue
		}
		r, n := jsonEscapedRune(raw[i:])
		if n == 0 || r == '"' || r == '\\' || unicode.IsControl(r) {
			out = append(out, raw[i])
			continue
		}
		out = utf8.AppendRune(out, r)
		i += n - 1
	}
	return out
}

// jsonEscapedRune decodes the \uXXXX escape (or surrogate pair of escapes)
// at the start of s and returns the rune and the bytes it took; n is 0 when
// s does not start with a valid escape of a character.
func jsonEscapedRune(s []byte) (r rune, n int) {
	hex4 := func(s []byte) rune {
		if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
			return -1
		}
		v, err := strconv.ParseUint(string(s[2:6]), 16, 32)
		if err != nil {
			return -1
		}
		return rune(v)
	}
	r = hex4(s)
	switch {
	case r < 0:
		return 0, 0
	case utf16.IsSurrogate(r):
		if r = utf16.DecodeRune(r, hex4(s[6:])); r == utf8.RuneError {
			return 0, 0
		}
		return r, 12
	}
	return r, 6
}

// compactJSON returns raw without insignificant white space; nil for null or empty.
func compactJSON(raw json.RawMessage) []byte {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

// Matches reports whether e, with the texts SearchTexts returns for it,
// satisfies every filter and the visibility of q. It is the reference
// semantics of EventQuery: the in-memory store uses it directly and SQL
// stores must agree with it.
func (q EventQuery) Matches(e Event, payload, meta string) bool {
	return q.matchesColumns(&e) && q.inPeriod(e) && q.shows(e) && q.matchesText(payload, meta)
}

// matchesColumns reports whether each list filter of q (ColumnFilters)
// holds: it has no values, or e's column is not null and is one of them.
func (q *EventQuery) matchesColumns(e *Event) bool {
	for i := range columnMatchers {
		c := &columnMatchers[i]
		if !c.given(q) {
			continue
		}
		var ok bool
		switch c.kind {
		case FieldText:
			ok = slices.Contains(*c.strings(q), *(*string)(c.column(e)))
		case FieldTextOrNull, FieldTextOrAbsent:
			col := *(**string)(c.column(e))
			ok = col != nil && slices.Contains(*c.strings(q), *col)
		case FieldInt:
			ok = slices.Contains(*c.ints(q), *(*int64)(c.column(e)))
		default: // FieldIntOrNull, the last kind resolveColumnMatchers lets through
			col := *(**int64)(c.column(e))
			ok = col != nil && slices.Contains(*c.ints(q), *col)
		}
		if !ok {
			return false
		}
	}
	return true
}

// inPeriod reports whether e was created from q.From on and before q.Before.
func (q EventQuery) inPeriod(e Event) bool {
	return (q.From == nil || !e.CreatedAt.Before(*q.From)) && (q.Before == nil || e.CreatedAt.Before(*q.Before))
}

// shows reports whether the caller of q may see e: it names a project
// when q requires one, and none the caller may not see.
func (q EventQuery) shows(e Event) bool {
	if e.Project == nil {
		return !q.RequireProject
	}
	return !ProjectHidden(*e.Project, q.HiddenProjects)
}

// matchesText reports whether the text of q, if any, is in the event's
// payload, or in its type and creator when the scope says so.
func (q EventQuery) matchesText(payload, meta string) bool {
	return q.Text == "" || strings.Contains(payload, q.Text) ||
		q.TextScope == TextPayloadTypeCreator && strings.Contains(meta, q.Text)
}

// AllProjects is the project Unleash records on the events of a token
// for every project.
const AllProjects = "*"

// ProjectHidden reports whether an event whose project column is project
// is hidden by hidden, the projects a caller may not see: when the
// column names one of them, as a whole or as one of its comma-joined
// projects (Unleash records the events of a token for several projects
// with their ids joined by commas, "default,payments"). A caller who may
// not see some project has AllProjects among its hidden projects too
// (restrict), so an event naming every project is seen only by callers
// who see every project.
func ProjectHidden(project string, hidden []string) bool {
	if len(hidden) == 0 {
		return false
	}
	for p := range strings.SplitSeq(project, ",") {
		if slices.Contains(hidden, p) {
			return true
		}
	}
	return false
}

// CompareEvents orders events as both searches return them: createdAt
// descending, then id descending. It returns a negative number when a comes first.
func CompareEvents(a, b Event) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	switch {
	case a.ID > b.ID:
		return -1
	case a.ID < b.ID:
		return 1
	}
	return 0
}
