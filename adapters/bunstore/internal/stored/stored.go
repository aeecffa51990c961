// Package stored is the form values take in the store's tables: times as
// Unix milliseconds (UTC), JSON as text, tags as a JSON array, and the row
// of an event (Event), with the columns an event is read back from. The
// store's core and its speed-ups (the PostgreSQL page reader) read and
// write events through it, so they agree on every byte.
package stored

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// EventColumns are the columns an event is read back from, in the order
// Event declares them (not the search texts): the column of each
// flagadmin.EventFields, in its order, named by ColumnName.
var EventColumns = func() []string {
	var out []string
	for _, f := range flagadmin.EventFields() {
		out = append(out, ColumnName(f.Name))
	}
	return out
}()

// columns are the columns of the events table by the name of the
// flagadmin.EventField they hold.
var columns = func() map[string]string {
	m := map[string]string{}
	for _, f := range flagadmin.EventFields() {
		m[f.Name] = ColumnName(f.Name)
	}
	return m
}()

// ColumnName is the column of the events table that holds the declared
// event field called field: its name in snake case (featureName,
// feature_name; createdByUserId, created_by_user_id).
func ColumnName(field string) string {
	var b strings.Builder
	for i, r := range field {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
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

// Event is a row of the events table: a field for each declared event
// field (flagadmin.EventFields), tagged with its column (ColumnName) and
// of the type its kind is stored as (rowTypes), then the search texts and
// the salt. EventOf and Event copy the declared fields by that table.
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

// RowColumns are the columns of a row (every field of Event with a
// column), in Event's order: the columns a COPY of rows fills (Values).
var RowColumns, rowIndexes = func() (cols []string, idx []int) {
	t := reflect.TypeFor[Event]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("bun"), ",")
		if name != "" && !strings.HasPrefix(name, "table:") {
			cols, idx = append(cols, name), append(idx, i)
		}
	}
	return cols, idx
}()

// Values returns the values of the row's RowColumns, in their order.
func (r *Event) Values() []any {
	v := reflect.ValueOf(r).Elem()
	out := make([]any, len(rowIndexes))
	for i, f := range rowIndexes {
		out[i] = v.Field(f).Interface()
	}
	return out
}

// rowTypes are the Go types of a row's field by the kind of the declared
// field it holds: times as Unix milliseconds, JSON and tags as text.
var rowTypes = map[flagadmin.EventFieldKind]reflect.Type{
	flagadmin.FieldInt:          reflect.TypeFor[int64](),
	flagadmin.FieldTime:         reflect.TypeFor[int64](),
	flagadmin.FieldText:         reflect.TypeFor[string](),
	flagadmin.FieldIntOrNull:    reflect.TypeFor[*int64](),
	flagadmin.FieldTextOrNull:   reflect.TypeFor[*string](),
	flagadmin.FieldTextOrAbsent: reflect.TypeFor[*string](),
	flagadmin.FieldJSONOrNull:   reflect.TypeFor[*string](),
	flagadmin.FieldTags:         reflect.TypeFor[*string](),
}

// rowField is a declared event field with the offset of its field in Event.
type rowField struct {
	flagadmin.EventField
	offset uintptr
}

// rowFields are the declared event fields with their fields in Event,
// found by column at init: a declared field without its field of the
// type rowTypes gives panics, which every test of the store catches.
var rowFields = func() []rowField {
	byColumn := map[string]reflect.StructField{}
	t := reflect.TypeFor[Event]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("bun"), ",")
		byColumn[name] = t.Field(i)
	}
	var out []rowField
	for _, f := range flagadmin.EventFields() {
		sf, ok := byColumn[ColumnName(f.Name)]
		if !ok || sf.Type != rowTypes[f.Kind] {
			panic("stored: the event field " + f.Name + " has no field of its type in stored.Event")
		}
		out = append(out, rowField{f, sf.Offset})
	}
	return out
}()

// EventOf returns the row of e with its search texts (flagadmin.SearchTexts),
// its id and its salt.
func EventOf(e flagadmin.Event) (Event, error) {
	var r Event
	for _, f := range rowFields {
		p := unsafe.Add(unsafe.Pointer(&r), f.offset)
		switch f.Kind {
		case flagadmin.FieldInt:
			*(*int64)(p) = *f.Int(&e)
		case flagadmin.FieldTime:
			*(*int64)(p) = Millis(*f.Time(&e))
		case flagadmin.FieldText:
			*(*string)(p) = *f.Text(&e)
		case flagadmin.FieldIntOrNull:
			*(**int64)(p) = *f.IntOrNull(&e)
		case flagadmin.FieldTextOrNull, flagadmin.FieldTextOrAbsent:
			*(**string)(p) = *f.TextOrNull(&e)
		case flagadmin.FieldJSONOrNull:
			*(**string)(p) = RawText(*f.JSON(&e))
		case flagadmin.FieldTags:
			tags, err := TagsText(*f.Tags(&e))
			if err != nil {
				return Event{}, err
			}
			*(**string)(p) = tags
		}
	}
	r.SearchPayload, r.SearchMeta = flagadmin.SearchTexts(e)
	r.Salt = e.Salt
	return r, nil
}

// Event returns the event of the row.
func (r Event) Event() (flagadmin.Event, error) {
	var e flagadmin.Event
	for _, f := range rowFields {
		p := unsafe.Add(unsafe.Pointer(&r), f.offset)
		switch f.Kind {
		case flagadmin.FieldInt:
			*f.Int(&e) = *(*int64)(p)
		case flagadmin.FieldTime:
			*f.Time(&e) = Time(*(*int64)(p))
		case flagadmin.FieldText:
			*f.Text(&e) = *(*string)(p)
		case flagadmin.FieldIntOrNull:
			*f.IntOrNull(&e) = *(**int64)(p)
		case flagadmin.FieldTextOrNull, flagadmin.FieldTextOrAbsent:
			*f.TextOrNull(&e) = *(**string)(p)
		case flagadmin.FieldJSONOrNull:
			*f.JSON(&e) = Raw(*(**string)(p))
		case flagadmin.FieldTags:
			tags, err := Tags(*(**string)(p))
			if err != nil {
				return flagadmin.Event{}, err
			}
			*f.Tags(&e) = tags
		}
	}
	return e, nil
}

// AsStored returns e as a row holds it and Event reads it back: its
// times to the millisecond, and empty JSON (data, preData) as none
// (RawText).
func AsStored(e flagadmin.Event) flagadmin.Event {
	for _, f := range rowFields {
		switch f.Kind {
		case flagadmin.FieldTime:
			*f.Time(&e) = Time(Millis(*f.Time(&e)))
		case flagadmin.FieldJSONOrNull:
			*f.JSON(&e) = Raw(RawText(*f.JSON(&e)))
		}
	}
	return e
}

// ProjectHidden is the SQL form of flagadmin.ProjectHidden on column, a
// project column, for hidden (not empty) on the database of dialect d:
// the column is one of hidden, or holds comma-joined projects one of
// which is (ListsProject).
//
// On PostgreSQL hidden is one array value (sqlq.Texts), whose elements a
// sub-select lists: PostgreSQL puts them in a hash table once per run of
// the statement and looks each row's column up in it (a hashed SubPlan).
// A statement kept prepared otherwise built an IN list's array for each
// row it filters (0.8 µs a row for 10 projects), and = ANY of the array
// alone compares each row with every element in turn (with the lookup,
// random offsets and free text answered a larger share of the machine's
// ceiling in 11 rounds of 12, BENCHMARKS.md). The = ANY after
// the lookup runs only for the rows the lookup finds hidden; it is there
// for the planner, which guesses that a sub-select's test keeps half the
// rows, and with that guess alone read a page at a large offset of a
// small table by sorting every event before it instead of reading its
// range (TestSeekPageReadsARangeOnPostgres); with both, it estimates the
// rows as it did with = ANY alone.
func ProjectHidden(d dialect.Name, column string, hidden []string) sqlq.Fragment {
	one := sqlq.In(column, hidden)
	if d == dialect.PG {
		one = sqlq.F("("+column+" IN (SELECT unnest(CAST(? AS text[]))) AND "+column+" = ANY(CAST(? AS text[])))",
			sqlq.Texts(hidden), sqlq.Texts(hidden))
	}
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
