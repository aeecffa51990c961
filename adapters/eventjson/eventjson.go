// Package eventjson writes an event as its JSON, the Event JSON of the admin
// API's search pages, by hand and without reflection: the bytes are exactly
// those encoding/json writes for a flagadmin.Event (its MarshalJSON) with
// HTML escaping off, as the API writes them. It is the one encoder of
// events: the HTTP API's pages, export and stream, and the webhook bodies
// all use it, so a receiver sees the same bytes everywhere.
//
// Data and preData are appended as they are: the stores hold them compact
// and valid (the Service normalizes every event it writes, seed files
// included), so they are neither validated nor compacted again; except
// that a line break, which only a database changed by hand can hold, is
// compacted away, so that one event stays one line of NDJSON.
package eventjson

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// AppendEvent appends the event's JSON, the bytes Event.MarshalJSON
// returns for an event whose data and preData are nil or compact JSON.
func AppendEvent(b []byte, e *flagadmin.Event) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, e.ID, 10)
	b = append(b, `,"createdAt":`...)
	b = AppendTime(b, e.CreatedAt)
	b = append(b, `,"type":`...)
	b = AppendString(b, e.Type)
	b = append(b, `,"createdBy":`...)
	b = AppendString(b, e.CreatedBy)
	b = append(b, `,"createdByUserId":`...)
	if e.CreatedByUserID == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *e.CreatedByUserID, 10)
	}
	b = append(b, `,"environment":`...)
	b = AppendStringPtr(b, e.Environment)
	b = append(b, `,"project":`...)
	b = AppendStringPtr(b, e.Project)
	b = append(b, `,"featureName":`...)
	b = AppendStringPtr(b, e.FeatureName)
	b = append(b, `,"data":`...)
	b = AppendRaw(b, e.Data)
	b = append(b, `,"preData":`...)
	b = AppendRaw(b, e.PreData)
	b = append(b, `,"tags":`...)
	b = AppendTags(b, e.Tags)
	if e.GroupType != nil { // left out when absent, as Unleash does
		b = append(b, `,"groupType":`...)
		b = AppendString(b, *e.GroupType)
	}
	if e.GroupID != nil {
		b = append(b, `,"groupId":`...)
		b = AppendString(b, *e.GroupID)
	}
	return append(b, '}')
}

// AppendTags appends tags as a JSON array, [] when there are none (an
// event's tags are never null on the wire), each as flagadmin.Tag writes
// itself (flagadmin.AppendTagJSON).
func AppendTags(b []byte, tags []flagadmin.Tag) []byte {
	b = append(b, '[')
	for i, t := range tags {
		if i > 0 {
			b = append(b, ',')
		}
		b = flagadmin.AppendTagJSON(b, t)
	}
	return append(b, ']')
}

// AppendRaw appends stored JSON as it is, null when nil.
func AppendRaw(b, raw []byte) []byte {
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

// AppendTime appends t in flagadmin.TimeLayout (UTC) as a JSON string. Years 0
// to 9999 are written digit by digit, several times faster than
// AppendFormat, which writes the others.
func AppendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		b = append(b, '"')
		b = t.AppendFormat(b, flagadmin.TimeLayout)
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

// AppendStringPtr appends *s as a JSON string (AppendString), null when s is nil.
func AppendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return AppendString(b, *s)
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

// AppendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping off: short escapes for \" \\ \b \f \n \r \t, \u00XX
// for other control characters, \ufffd for each byte of invalid UTF-8, and
// \u2028 and \u2029 escaped.
func AppendString(b []byte, s string) []byte {
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
