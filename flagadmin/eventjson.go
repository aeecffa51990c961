package flagadmin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// This file writes events as JSON by hand, without reflection. The bytes are
// exactly those encoding/json writes for the wire form of an event with HTML
// escaping off (what Event.MarshalJSON wrote through reflection before, and
// what the tests still compare against): strings escaped like encoding/json,
// data and preData compacted like a json.RawMessage, null for nil.

// AppendJSON appends the event's JSON (the bytes MarshalJSON returns) to b.
// It fails only when Data or PreData is not nil and not valid JSON; b is
// then returned unchanged.
func (e Event) AppendJSON(b []byte) ([]byte, error) {
	orig := len(b)
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, e.ID, 10)
	b = append(b, `,"createdAt":`...)
	b = appendJSONTime(b, e.CreatedAt)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.Type)
	b = append(b, `,"createdBy":`...)
	b = appendJSONString(b, e.CreatedBy)
	b = append(b, `,"createdByUserId":`...)
	if e.CreatedByUserID == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *e.CreatedByUserID, 10)
	}
	b = append(b, `,"environment":`...)
	b = appendJSONStringPtr(b, e.Environment)
	b = append(b, `,"project":`...)
	b = appendJSONStringPtr(b, e.Project)
	b = append(b, `,"featureName":`...)
	b = appendJSONStringPtr(b, e.FeatureName)
	var err error
	b = append(b, `,"data":`...)
	if b, err = appendRawJSON(b, e.Data); err != nil {
		return b[:orig], fmt.Errorf("event %d: data: %w", e.ID, err)
	}
	b = append(b, `,"preData":`...)
	if b, err = appendRawJSON(b, e.PreData); err != nil {
		return b[:orig], fmt.Errorf("event %d: preData: %w", e.ID, err)
	}
	b = append(b, `,"tags":[`...)
	for i, t := range e.Tags {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"value":`...)
		b = appendJSONString(b, t.Value)
		b = append(b, `,"type":`...)
		b = appendJSONString(b, t.Type)
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

// jsonSizeHint is roughly the length of the event's JSON, to size buffers.
func (e Event) jsonSizeHint() int {
	n := 220 + len(e.Type) + len(e.CreatedBy) + len(e.Data) + len(e.PreData) + 30*len(e.Tags)
	for _, s := range []*string{e.Environment, e.Project, e.FeatureName} {
		if s != nil {
			n += len(*s)
		}
	}
	return n
}

// AppendEventsJSON appends events as a JSON array of Event.AppendJSON, the
// way encoding/json writes a []Event: null when events is nil. On error b is
// returned unchanged.
func AppendEventsJSON(b []byte, events []Event) ([]byte, error) {
	if events == nil {
		return append(b, "null"...), nil
	}
	orig := len(b)
	b = append(b, '[')
	for i := range events {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = events[i].AppendJSON(b); err != nil {
			return b[:orig], err
		}
	}
	return append(b, ']'), nil
}

// AppendEventsJSON appends the page's events as AppendEventsJSON(b,
// p.Events) does. A page from a Service with a result cache
// (WithResultCache) carries its events encoded already, and those bytes
// are copied instead, as long as Events is still the slice they were
// encoded from (reassigning or reslicing Events makes the page encode it
// again; the events themselves must not be changed). On error b is
// returned unchanged.
func (p EventPage) AppendEventsJSON(b []byte) ([]byte, error) {
	if e := p.encoded; e != nil && e.encodes(p.Events) {
		return append(b, e.json...), nil
	}
	return AppendEventsJSON(b, p.Events)
}

// encodedEvents is a non-empty slice of events and its AppendEventsJSON
// bytes; both are read-only.
type encodedEvents struct {
	json []byte
	// first and n identify the slice json was written from.
	first *Event
	n     int
}

// encodeEvents returns events with their JSON, or nil when events is empty
// (nothing worth keeping) or cannot be encoded (the error is reported
// again when the page is written).
func encodeEvents(events []Event) *encodedEvents {
	if len(events) == 0 {
		return nil
	}
	n := 2
	for i := range events {
		n += events[i].jsonSizeHint() + 1
	}
	b, err := AppendEventsJSON(make([]byte, 0, n), events)
	if err != nil {
		return nil
	}
	if cap(b)-len(b) > len(b)/16 {
		b = bytes.Clone(b) // kept for long: do not keep the hint's excess
	}
	return &encodedEvents{json: b, first: &events[0], n: len(events)}
}

// encodes reports whether e holds the JSON of events.
func (e *encodedEvents) encodes(events []Event) bool {
	return len(events) == e.n && &events[0] == e.first
}

// AppendJSON appends the page as encoding/json writes it,
// {"events":[...],"total":N}, to b. On error b is returned unchanged.
func (p EventPage) AppendJSON(b []byte) ([]byte, error) {
	orig := len(b)
	b = append(b, `{"events":`...)
	b, err := p.AppendEventsJSON(b)
	if err != nil {
		return b[:orig], err
	}
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, int64(p.Total), 10)
	return append(b, '}'), nil
}

// appendJSONTime appends t in TimeLayout (UTC) as a JSON string. Years 0
// to 9999 are written digit by digit, several times faster than
// AppendFormat, which writes the others.
func appendJSONTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		b = append(b, '"')
		b = t.AppendFormat(b, TimeLayout)
		return append(b, '"')
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / int(time.Millisecond)
	return append(b, '"',
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z', '"')
}

func appendJSONStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *s)
}

const hexDigits = "0123456789abcdef"

// jsonPlain marks the ASCII bytes encoding/json writes as themselves with
// HTML escaping off: everything from space up, except '"' and '\\'.
var jsonPlain = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONString appends s as a JSON string exactly as encoding/json does
// with HTML escaping off: short escapes for \" \\ \b \f \n \r \t, \u00XX
// for other control characters, \ufffd for each byte of invalid UTF-8, and
// \u2028 and \u2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonPlain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendRawJSON appends raw JSON as encoding/json writes a json.RawMessage
// with HTML escaping off: null when nil, else the value with the whitespace
// between tokens removed, or an error when raw is not exactly one JSON value.
// Invalid input is rare (the Service stores compact objects), so it is
// handed to json.Compact, which gives the error.
func appendRawJSON(b, raw []byte) ([]byte, error) {
	if raw == nil {
		return append(b, "null"...), nil
	}
	if out, ok := scanRawJSON(b, raw); ok {
		return out, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return b, err
	}
	// Unreachable while scanRawJSON accepts what encoding/json accepts (the
	// tests compare them); encoding/json's answer is the one to write.
	return append(b, buf.Bytes()...), nil
}

// maxRawJSONDepth is encoding/json's limit on nested objects and arrays.
const maxRawJSONDepth = 10000

// scanRawJSON validates raw with the grammar encoding/json's scanner accepts
// (RFC 8259; any bytes but control characters inside strings; at most
// 10,000 nested objects and arrays) and appends it to b without the
// whitespace between tokens. It reports false, with b unchanged, for
// anything encoding/json rejects. Already compact input is copied in one go.
func scanRawJSON(b, raw []byte) ([]byte, bool) {
	s := rawScanner{src: raw, dst: b}
	s.space()
	if !s.value(0) {
		return b, false
	}
	s.space()
	if s.i != len(raw) {
		return b, false
	}
	return append(s.dst, raw[s.start:]...), true
}

// rawScanner is a recursive-descent JSON validator that copies its input to
// dst minus insignificant whitespace.
type rawScanner struct {
	src   []byte
	dst   []byte
	i     int // the next byte of src to read
	start int // the first byte of src not yet copied to dst
}

func isJSONSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// space skips whitespace, copying what came before it. It is small enough
// to be inlined; skipSpace does the work when there is whitespace.
func (s *rawScanner) space() {
	if s.i < len(s.src) && isJSONSpace(s.src[s.i]) {
		s.skipSpace()
	}
}

func (s *rawScanner) skipSpace() {
	i := s.i
	s.dst = append(s.dst, s.src[s.start:i]...)
	for i < len(s.src) && isJSONSpace(s.src[i]) {
		i++
	}
	s.i, s.start = i, i
}

// value reads one value nested in depth objects and arrays.
func (s *rawScanner) value(depth int) bool {
	if s.i >= len(s.src) {
		return false
	}
	switch c := s.src[s.i]; {
	case c == '"':
		return s.str()
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || isDigit(c):
		return s.number()
	}
	return false
}

// next returns the byte at s.i, or 0 at the end.
func (s *rawScanner) next() byte {
	if s.i < len(s.src) {
		return s.src[s.i]
	}
	return 0
}

func (s *rawScanner) object(depth int) bool {
	if depth > maxRawJSONDepth {
		return false
	}
	s.i++ // {
	s.space()
	if s.next() == '}' {
		s.i++
		return true
	}
	for {
		if s.next() != '"' || !s.str() {
			return false
		}
		s.space()
		if s.next() != ':' {
			return false
		}
		s.i++
		s.space()
		if !s.value(depth) {
			return false
		}
		s.space()
		switch s.next() {
		case ',':
			s.i++
			s.space()
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *rawScanner) array(depth int) bool {
	if depth > maxRawJSONDepth {
		return false
	}
	s.i++ // [
	s.space()
	if s.next() == ']' {
		s.i++
		return true
	}
	for {
		if !s.value(depth) {
			return false
		}
		s.space()
		switch s.next() {
		case ',':
			s.i++
			s.space()
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// rawStringPlain marks the bytes a JSON string holds as themselves: all but
// control characters, '"' and '\\'.
var rawStringPlain = func() (t [256]bool) {
	for c := ' '; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string: s.src[s.i] is its opening quote.
func (s *rawScanner) str() bool {
	src := s.src
	for i := s.i + 1; i < len(src); {
		for i+4 <= len(src) && rawStringPlain[src[i]] && rawStringPlain[src[i+1]] && rawStringPlain[src[i+2]] && rawStringPlain[src[i+3]] {
			i += 4
		}
		for i < len(src) && rawStringPlain[src[i]] {
			i++
		}
		if i >= len(src) {
			return false
		}
		switch src[i] {
		case '"':
			s.i = i + 1
			return true
		case '\\':
			if i+1 >= len(src) {
				return false
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(src) {
					return false
				}
				for _, h := range src[i+2 : i+6] {
					if !isDigit(h) && (h|0x20 < 'a' || h|0x20 > 'f') {
						return false
					}
				}
				i += 6
			default:
				return false
			}
		default: // a control character
			return false
		}
	}
	return false
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *rawScanner) number() bool {
	src, i := s.src, s.i
	if src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && src[i] >= '1' && src[i] <= '9':
		i = skipDigits(src, i)
	default:
		return false
	}
	if i < len(src) && src[i] == '.' {
		if i = skipDigits(src, i+1); i < 0 {
			return false
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i = skipDigits(src, i); i < 0 {
			return false
		}
	}
	s.i = i
	return true
}

// skipDigits returns the index after the digits at src[i:], or -1 when
// there are none.
func skipDigits(src []byte, i int) int {
	if i >= len(src) || !isDigit(src[i]) {
		return -1
	}
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	return i
}

func (s *rawScanner) literal(lit string) bool {
	if len(s.src)-s.i < len(lit) || string(s.src[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}
