package httpapi

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// This file writes events and project list entries as JSON by hand,
// without reflection. The bytes are exactly those encoding/json writes for
// them (their MarshalJSON) with HTML escaping off, as Huma's JSON format
// writes them; the tests compare the two. It is about twelve times faster
// than encoding/json on a page of events (see BenchmarkEventPageJSON),
// which is most of the server's output.
//
// Data and preData are appended as they are: the stores hold them compact
// and valid (the Service normalizes every event it writes, seed files
// included), so they are neither validated nor compacted again.

// appendEvent appends the event's JSON, the bytes Event.MarshalJSON
// returns for an event whose data and preData are nil or compact JSON.
func appendEvent(b []byte, e *flagadmin.Event) []byte {
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
	b = append(b, `,"data":`...)
	b = appendRaw(b, e.Data)
	b = append(b, `,"preData":`...)
	b = appendRaw(b, e.PreData)
	b = append(b, `,"tags":`...)
	b = appendTags(b, e.Tags)
	return append(b, '}')
}

// appendTags appends tags as a JSON array, [] when there are none (an
// event's tags are never null on the wire).
func appendTags(b []byte, tags []flagadmin.Tag) []byte {
	b = append(b, '[')
	for i, t := range tags {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"value":`...)
		b = appendJSONString(b, t.Value)
		b = append(b, `,"type":`...)
		b = appendJSONString(b, t.Type)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendRaw appends stored JSON as it is, null when nil.
func appendRaw(b, raw []byte) []byte {
	if raw == nil {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// appendEvents appends events as a JSON array of appendEvent, the way
// encoding/json writes a []Event: null when events is nil.
func appendEvents(b []byte, events []flagadmin.Event) []byte {
	if events == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEvent(b, &events[i])
	}
	return append(b, ']')
}

// appendProjectOwner appends the owner's JSON, the bytes
// ProjectOwner.MarshalJSON returns.
func appendProjectOwner(b []byte, o *flagadmin.ProjectOwner) []byte {
	switch o.OwnerType {
	case flagadmin.OwnerUser:
		b = append(b, `{"ownerType":"user","name":`...)
		b = appendJSONString(b, o.Name)
		b = append(b, `,"email":`...)
		b = appendJSONStringPtr(b, o.Email)
		b = append(b, `,"imageUrl":`...)
		b = appendJSONStringPtr(b, o.ImageURL)
		return append(b, '}')
	case flagadmin.OwnerGroup:
		b = append(b, `{"ownerType":"group","name":`...)
		b = appendJSONString(b, o.Name)
		return append(b, '}')
	default:
		return append(b, `{"ownerType":"system"}`...)
	}
}

// appendProjectListEntry appends the entry's JSON, the bytes
// ProjectListEntry.MarshalJSON returns: the fields in the order of the
// struct with the dates last, dates in TimeLayout, owners null when nil.
func appendProjectListEntry(b []byte, p *flagadmin.ProjectListEntry) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, p.ID)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, p.Name)
	b = append(b, `,"description":`...)
	b = appendJSONString(b, p.Description)
	b = append(b, `,"health":`...)
	b = strconv.AppendInt(b, int64(p.Health), 10)
	b = append(b, `,"technicalDebt":`...)
	b = strconv.AppendInt(b, int64(p.TechnicalDebt), 10)
	b = append(b, `,"featureCount":`...)
	b = strconv.AppendInt(b, int64(p.FeatureCount), 10)
	b = append(b, `,"memberCount":`...)
	b = strconv.AppendInt(b, int64(p.MemberCount), 10)
	b = append(b, `,"favorite":`...)
	b = strconv.AppendBool(b, p.Favorite)
	b = append(b, `,"mode":`...)
	b = appendJSONString(b, string(p.Mode))
	b = append(b, `,"owners":`...)
	if p.Owners == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range p.Owners {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendProjectOwner(b, &p.Owners[i])
		}
		b = append(b, ']')
	}
	b = append(b, `,"createdAt":`...)
	b = appendJSONTime(b, p.CreatedAt)
	b = append(b, `,"lastUpdatedAt":`...)
	b = appendJSONTimePtr(b, p.LastUpdatedAt)
	b = append(b, `,"archivedAt":`...)
	b = appendJSONTimePtr(b, p.ArchivedAt)
	b = append(b, `,"lastReportedFlagUsage":`...)
	b = appendJSONTimePtr(b, p.LastReportedFlagUsage)
	return append(b, '}')
}

// appendJSONTimePtr appends t in TimeLayout as a JSON string, null when nil.
func appendJSONTimePtr(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendJSONTime(b, *t)
}

// appendJSONTime appends t in flagadmin.TimeLayout (UTC) as a JSON string. Years 0
// to 9999 are written digit by digit, several times faster than
// AppendFormat, which writes the others.
func appendJSONTime(b []byte, t time.Time) []byte {
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
