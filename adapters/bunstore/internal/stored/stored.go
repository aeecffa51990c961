// Package stored is the form values take in the store's tables: times as
// Unix milliseconds (UTC), JSON as text, tags as a JSON array, and the row
// of an event (Event), with the columns an event is read back from. The
// store's core and its speed-ups (the PostgreSQL page reader) read and
// write events through it, so they agree on every byte.
package stored

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// EventColumns are the columns an event is read back from, in the order
// Event declares them (not the search texts): the column of each
// flagadmin.EventFields, in its order (a test holds them to it).
var EventColumns = []string{"id", "created_at", "type", "created_by", "created_by_user_id", "environment", "project", "feature_name", "data", "pre_data", "tags", "group_type", "group_id"}

// columns are the columns of the events table by the name of the
// flagadmin.EventField they hold.
var columns = map[string]string{
	"id": "id", "createdAt": "created_at", "type": "type", "createdBy": "created_by", "createdByUserId": "created_by_user_id",
	"environment": "environment", "project": "project", "featureName": "feature_name", "data": "data", "preData": "pre_data",
	"tags": "tags", "groupType": "group_type", "groupId": "group_id",
}

// Column returns the column of the events table that holds the
// flagadmin.EventField called field (a column filter's
// FilterParam.Column). It panics on a field without a column: a field
// declared in the domain and not stored here is a bug a test finds.
func Column(field string) string {
	c, ok := columns[field]
	if !ok {
		panic("stored: no column for the event field " + field)
	}
	return c
}

// Event is a row of the events table.
type Event struct {
	bun.BaseModel `bun:"table:events"`

	ID              int64   `bun:"id,pk,autoincrement"`
	CreatedAt       int64   `bun:"created_at"`
	Type            string  `bun:"type"`
	CreatedBy       string  `bun:"created_by"`
	CreatedByUserID *int64  `bun:"created_by_user_id"`
	Environment     *string `bun:"environment"`
	Project         *string `bun:"project"`
	FeatureName     *string `bun:"feature_name"`
	Data            *string `bun:"data"`
	PreData         *string `bun:"pre_data"`
	Tags            *string `bun:"tags"`
	GroupType       *string `bun:"group_type"`
	GroupID         *string `bun:"group_id"`
	SearchPayload   string  `bun:"search_payload"`
	SearchMeta      string  `bun:"search_meta"`
	// Salt is the event's salt (flagadmin.Event.Salt), read back only for
	// the verifiable log: not one of EventColumns.
	Salt []byte `bun:"salt"`
}

// EventOf returns the row of e with its search texts (flagadmin.SearchTexts),
// its id and its salt.
func EventOf(e flagadmin.Event) (Event, error) {
	tags, err := TagsText(e.Tags)
	if err != nil {
		return Event{}, err
	}
	payload, meta := flagadmin.SearchTexts(e)
	return Event{
		ID: e.ID, CreatedAt: Millis(e.CreatedAt), Type: e.Type, CreatedBy: e.CreatedBy, CreatedByUserID: e.CreatedByUserID,
		Environment: e.Environment, Project: e.Project, FeatureName: e.FeatureName,
		Data: RawText(e.Data), PreData: RawText(e.PreData), Tags: tags, GroupType: e.GroupType, GroupID: e.GroupID,
		SearchPayload: payload, SearchMeta: meta, Salt: e.Salt,
	}, nil
}

// Event returns the event of the row.
func (r Event) Event() (flagadmin.Event, error) {
	tags, err := Tags(r.Tags)
	if err != nil {
		return flagadmin.Event{}, err
	}
	return flagadmin.Event{
		ID: r.ID, CreatedAt: Time(r.CreatedAt), Type: r.Type, CreatedBy: r.CreatedBy, CreatedByUserID: r.CreatedByUserID,
		Environment: r.Environment, Project: r.Project, FeatureName: r.FeatureName,
		Data: Raw(r.Data), PreData: Raw(r.PreData), Tags: tags, GroupType: r.GroupType, GroupID: r.GroupID,
	}, nil
}

// ProjectHidden is the SQL form of flagadmin.ProjectHidden on column, a
// project column, for hidden (not empty) on the database of dialect d:
// the column is one of hidden, or holds comma-joined projects one of
// which is (ListsProject).
func ProjectHidden(d dialect.Name, column string, hidden []string) sqlq.Fragment {
	one := sqlq.In(column, hidden)
	listed := ListsProject(d, column, hidden)
	if listed.Empty() {
		return one
	}
	return sqlq.Join(" OR ", one, listed).Wrap("(", ")")
}

// ListsProject is the condition that column holds comma-joined projects
// one of which is in projects, on the database of dialect d; empty when
// no project of projects can be one of them (a project with a comma is
// only ever a whole column). Its tests are exact and case-sensitive on
// every database (SQLite's LIKE, which folds case, only tells a comma
// apart).
func ListsProject(d dialect.Name, column string, projects []string) sqlq.Fragment {
	var contains string
	switch d {
	case dialect.PG:
		contains = "strpos(',' || " + column + " || ',', ?) > 0"
	case dialect.MySQL:
		contains = "LOCATE(?, CONCAT(',', " + column + ", ',')) > 0"
	default:
		contains = "instr(',' || " + column + " || ',', ?) > 0"
	}
	var parts []sqlq.Fragment
	for _, p := range projects {
		if !strings.Contains(p, ",") {
			parts = append(parts, sqlq.F(contains, ","+p+","))
		}
	}
	if len(parts) == 0 {
		return sqlq.Fragment{}
	}
	return sqlq.Join(" OR ", parts...).Wrap("("+column+" LIKE '%,%' AND (", "))")
}

// Millis is t in Unix milliseconds (the domain keeps millisecond precision).
func Millis(t time.Time) int64 { return t.UnixMilli() }

// CeilMillis is the smallest number of Unix milliseconds not before t: a
// stored time m is before t exactly when m < CeilMillis(t).
func CeilMillis(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

// MillisPtr is Millis of *t, nil for nil.
func MillisPtr(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	ms := Millis(*t)
	return &ms
}

// Time is the UTC time of Unix milliseconds.
func Time(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// TimePtr is Time of *ms, nil for nil.
func TimePtr(ms *int64) *time.Time {
	if ms == nil {
		return nil
	}
	t := Time(*ms)
	return &t
}

// RawText stores raw JSON as text; nil or empty is NULL.
func RawText(raw json.RawMessage) *string {
	if len(raw) == 0 {
		return nil
	}
	s := string(raw)
	return &s
}

// Raw is the raw JSON of stored text, nil for NULL.
func Raw(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

// TagsText stores tags as a JSON array; nil tags are NULL, so nil and
// empty come back as they were written.
func TagsText(tags []flagadmin.Tag) (*string, error) {
	if tags == nil {
		return nil, nil
	}
	b, err := json.Marshal(tags)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}

// Tags returns the tags of stored text (TagsText), nil for NULL.
func Tags(s *string) ([]flagadmin.Tag, error) {
	if s == nil {
		return nil, nil
	}
	if tags, ok := parseCanonicalTags(*s); ok {
		return tags, nil
	}
	tags := []flagadmin.Tag{}
	if err := json.Unmarshal([]byte(*s), &tags); err != nil {
		return nil, err
	}
	return tags, nil
}

// parseCanonicalTags reads tags in the exact form the store writes them
// (flagadmin.Tag's JSON), [{"value":"...","type":"..."},...] or, for a
// tag with a color key, {"type":"...","value":"...","color":"..." or
// null}, without spaces or escapes, without reflection: decoding tags
// with encoding/json was a fifth of a search page's server CPU. Anything
// else (an escape, a space, another order, invalid UTF-8 or a control
// character) reports false, for encoding/json to decode, so the result is
// always what it would give.
func parseCanonicalTags(s string) ([]flagadmin.Tag, bool) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	tags := []flagadmin.Tag{}
	rest := s[1 : len(s)-1]
	for rest != "" {
		if len(tags) > 0 {
			if rest[0] != ',' {
				return nil, false
			}
			rest = rest[1:]
		}
		t, after, ok := parseCanonicalTag(rest)
		if !ok {
			return nil, false
		}
		tags, rest = append(tags, t), after
	}
	return tags, true
}

// parseCanonicalTag reads one tag at the start of s, and returns it with
// what follows it.
func parseCanonicalTag(s string) (t flagadmin.Tag, rest string, ok bool) {
	if rest, ok = strings.CutPrefix(s, `{"value":`); ok {
		if t.Value, rest, ok = plainJSONString(rest); !ok {
			return t, "", false
		}
		if rest, ok = strings.CutPrefix(rest, `,"type":`); !ok {
			return t, "", false
		}
		if t.Type, rest, ok = plainJSONString(rest); !ok {
			return t, "", false
		}
		rest, ok = strings.CutPrefix(rest, "}")
		return t, rest, ok
	}
	if rest, ok = strings.CutPrefix(s, `{"type":`); !ok {
		return t, "", false
	}
	if t.Type, rest, ok = plainJSONString(rest); !ok {
		return t, "", false
	}
	if rest, ok = strings.CutPrefix(rest, `,"value":`); !ok {
		return t, "", false
	}
	if t.Value, rest, ok = plainJSONString(rest); !ok {
		return t, "", false
	}
	if rest, ok = strings.CutPrefix(rest, `,"color":`); !ok {
		return t, "", false
	}
	if after, null := strings.CutPrefix(rest, "null"); null {
		t.Color, rest = flagadmin.NullColor, after
	} else {
		var hex string
		if hex, rest, ok = plainJSONString(rest); !ok {
			return t, "", false
		}
		t.Color = flagadmin.ColorOf(hex)
	}
	rest, ok = strings.CutPrefix(rest, "}")
	return t, rest, ok
}

// plainJSONString reads a JSON string at the start of s that needs no
// decoding: no backslash, no control character, valid UTF-8. It returns the
// string's value and what follows it.
func plainJSONString(s string) (value, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		return "", "", false
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return "", "", false
	}
	v := s[1 : 1+end]
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == '\\' {
			return "", "", false
		}
	}
	if !utf8.ValidString(v) {
		return "", "", false
	}
	return v, s[2+end:], true
}
