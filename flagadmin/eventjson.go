package flagadmin

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// AppendEventJSON appends the Event JSON of e, the one encoder of events:
// the declared fields (EventFields) in their order, by hand and without
// reflection, the bytes encoding/json writes for them with HTML escaping
// off. createdAt is written in TimeLayout, tags as [] when there are none,
// and a field of kind FieldTextOrAbsent is left out when nil.
//
// Data and preData are appended as they are: the stores hold them compact
// and valid (the Service normalizes every event it writes, seed files
// included), so they are neither validated nor compacted again; except
// that a line break, which only a database changed by hand can hold, is
// compacted away, so that one event stays one line of NDJSON.
// MarshalJSON checks and compacts them first.
func AppendEventJSON(b []byte, e *Event) []byte { return appendEventJSON(b, e, false) }

// appendEventJSON is written from the declaration by eventgen: after a
// change to Event's fields, run go generate in flagadmin.
//go:generate go run ./internal/eventgen/cmd

// AppendTagsJSON appends tags as a JSON array, [] when there are none (an
// event's tags are never null on the wire), each as AppendTagJSON writes it.
func AppendTagsJSON(b []byte, tags []Tag) []byte {
	b = append(b, '[')
	for i, t := range tags {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendTagJSON(b, t)
	}
	return append(b, ']')
}

// appendRawJSON appends stored JSON as it is, null when nil, compacting
// away a line break.
func appendRawJSON(b, raw []byte) []byte {
	if raw == nil {
		return append(b, "null"...)
	}
	if bytes.ContainsAny(raw, "\r\n") {
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			return append(b, buf.Bytes()...)
		}
	}
	return append(b, raw...)
}

// AppendJSONTime appends t in TimeLayout (UTC) as a JSON string. Years 0
// to 9999 are written digit by digit, several times faster than
// AppendFormat, which writes the others.
func AppendJSONTime(b []byte, t time.Time) []byte {
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

const hexDigits = "0123456789abcdef"

// jsonPlain marks the ASCII bytes encoding/json writes as themselves with
// HTML escaping off: everything from space up, except '"' and '\\'.
var jsonPlain = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendJSONString appends s as a JSON string exactly as encoding/json
// does with HTML escaping off: short escapes for \" \\ \b \f \n \r \t,
// \u00XX for other control characters, \ufffd for each byte of invalid
// UTF-8, and \u2028 and \u2029 escaped.
func AppendJSONString(b []byte, s string) []byte {
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
