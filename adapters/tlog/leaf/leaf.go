// Package leaf is the leaf format of the verifiable log: the bytes a leaf
// hash commits to, computed from an event (LeafHash) or from its
// tombstone (LeafOf), in RFC 8785's canonical JSON (jcs.go). The stores
// and the verifier share it; the domain, flagadmin, keeps the events in
// the normal form the format needs (flagadmin.NormalizeEvent).
package leaf

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// The leaf of an event in the verifiable log, format v1
// (docs/verifiable-log.md shows a worked example):
//
//	content  = RFC 8785 canonical JSON of the event as the API shows it,
//	           without its "id" (SeedEventJSON)
//	commit   = SHA-256(salt || content)                    (32 bytes)
//	fields   = RFC 8785 canonical JSON of
//	           {"createdAt": ..., "id": ..., "project": ..., "type": ...}
//	input    = "flagadmin-leaf-v1\n" || fields || "\n" || commit
//	leaf     = SHA-256(0x00 || input)                       (RFC 9162)
//
// The leaf commits to what retention decides on (fields) apart from the
// rest of the event (commit), so the leaf of a pruned event can still be
// recomputed from its tombstone (vlog.Leaf without the event) and its
// removal checked against the retention the log records. The salt, 16
// random bytes drawn when the event is written, makes the leaf
// unguessable: a caller who may not see an event cannot confirm a guess
// of its content from its leaf hash or from the hashes of a proof. It is
// given only to callers who may see the event.

// LeafFormat names the leaf format; the checkpoints of a log name it.
const LeafFormat = "flagadmin-leaf-v1"

// SaltSize is the size of an event's salt in bytes (128 bits).
const SaltSize = 16

// NewSalt returns a new random salt.
func NewSalt() []byte {
	b := make([]byte, SaltSize)
	rand.Read(b) // never fails (crypto/rand)
	return b
}

// EventContent returns the canonical JSON (RFC 8785) of the event as the
// API shows it, without its id: the content a leaf commits to. The event
// must be in the log's normal form (flagadmin.NormalizeEvent), so that the content
// binds every value the API shows; an error of kind ErrValidation names
// the field that is not JSON or not in that form.
func EventContent(e flagadmin.Event) ([]byte, error) {
	if err := flagadmin.CheckNormal(e); err != nil {
		return nil, err
	}
	// The members of the API's Event JSON without "id" (the declared
	// fields, contentFields), written in RFC 8785's order (their names are
	// ASCII: byte order), each value in its canonical form: strings and
	// data by the RFC 8785 library, integers (within ±2^53 in the normal
	// form) as their digits. A test holds it to the library's canonical
	// form of SeedEventJSON.
	b := make([]byte, 0, 256+len(e.Data)+len(e.PreData))
	for _, f := range contentFields {
		if f.Kind == flagadmin.FieldTextOrAbsent && *f.TextOrNull(&e) == nil {
			continue // left out when absent
		}
		b = append(b, ',', '"')
		b = append(b, f.Name...)
		b = append(b, '"', ':')
		switch f.Kind {
		case flagadmin.FieldInt:
			b = strconv.AppendInt(b, *f.Int(&e), 10)
		case flagadmin.FieldTime:
			b = appendCanonicalString(b, formatTime(*f.Time(&e)))
		case flagadmin.FieldText:
			b = appendCanonicalString(b, *f.Text(&e))
		case flagadmin.FieldIntOrNull:
			if n := *f.IntOrNull(&e); n != nil {
				b = strconv.AppendInt(b, *n, 10)
			} else {
				b = append(b, "null"...)
			}
		case flagadmin.FieldTextOrNull, flagadmin.FieldTextOrAbsent:
			b = appendContentStringPtr(b, *f.TextOrNull(&e))
		case flagadmin.FieldJSONOrNull:
			var err error
			if b, err = appendContentRaw(b, f.Name, *f.JSON(&e)); err != nil {
				return nil, err
			}
		case flagadmin.FieldTags:
			b = appendContentTags(b, *f.Tags(&e))
		}
	}
	if len(b) == 0 { // no field written
		return []byte("{}"), nil
	}
	b[0] = '{' // the comma of the first member
	return append(b, '}'), nil
}

// contentFields are the declared fields of an event but its id, in RFC
// 8785's order of their names: the members of an event's content.
var contentFields = func() []flagadmin.EventField {
	var out []flagadmin.EventField
	for _, f := range flagadmin.EventFields() {
		if f.Name != "id" {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b flagadmin.EventField) int { return strings.Compare(a.Name, b.Name) })
	return out
}()

// appendContentTags appends tags as a canonical JSON array, each tag's
// members (color when present, type, value) in RFC 8785's order.
func appendContentTags(b []byte, tags []flagadmin.Tag) []byte {
	b = append(b, '[')
	for i, t := range tags {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if t.Color.Present() {
			b = append(b, `"color":`...)
			if hex, ok := t.Color.Hex(); ok {
				b = appendCanonicalString(b, hex)
			} else {
				b = append(b, "null"...)
			}
			b = append(b, ',')
		}
		b = append(b, `"type":`...)
		b = appendCanonicalString(b, t.Type)
		b = append(b, `,"value":`...)
		b = appendCanonicalString(b, t.Value)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendContentStringPtr appends s as a canonical JSON string, null when nil.
func appendContentStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendCanonicalString(b, *s)
}

// appendContentRaw appends stored JSON (data, preData) in canonical form,
// null when nil; an error of kind ErrValidation names field.
func appendContentRaw(b []byte, field string, raw []byte) ([]byte, error) {
	if raw == nil {
		return append(b, "null"...), nil
	}
	out, err := AppendCanonicalJSON(b, raw)
	if err != nil {
		return nil, invalid(field, "is not JSON: %v", err)
	}
	return out, nil
}

// ContentCommitment returns SHA-256 of the event's salt followed by its
// EventContent. The salt must be SaltSize bytes; the error otherwise, or
// EventContent's, is of kind ErrValidation.
func ContentCommitment(e flagadmin.Event) ([32]byte, error) {
	if len(e.Salt) != SaltSize {
		return [32]byte{}, invalid("salt", "must be %d bytes, got %d", SaltSize, len(e.Salt))
	}
	content, err := EventContent(e)
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	h.Write(e.Salt)
	h.Write(content)
	var out [32]byte
	h.Sum(out[:0])
	return out, nil
}

// LeafHash returns the hash of the event's leaf (format v1, above): of
// its id, createdAt, project and type, and of its ContentCommitment. The
// error is ContentCommitment's.
func LeafHash(e flagadmin.Event) ([32]byte, error) {
	commit, err := ContentCommitment(e)
	if err != nil {
		return [32]byte{}, err
	}
	before, after := leafParts(e.CreatedAt, e.Project, e.Type, commit)
	return hashLeafInput(before, e.ID, after), nil
}

// LeafOf returns the hash of the leaf l commits to: computed from its
// event id, CreatedAt, Project, Type and Content alone, so it holds for
// a tombstone as for a leaf whose event is kept. A verifier compares it
// with l.Hash, and, when it holds the event, l's fields with the event's
// (LeafMatches).
func LeafOf(l vlog.Leaf) [32]byte {
	before, after := leafParts(l.CreatedAt, l.Project, l.Type, l.Content)
	return hashLeafInput(before, l.EventID, after)
}

// LeafMatches reports whether the event e (with its salt) is the one
// leaf l commits to: the same id, createdAt, project and type, and the
// same content commitment. The error is ContentCommitment's.
func LeafMatches(l vlog.Leaf, e flagadmin.Event) (bool, error) {
	commit, err := ContentCommitment(e)
	if err != nil {
		return false, err
	}
	return e.ID == l.EventID && flagadmin.Truncate(e.CreatedAt).Equal(flagadmin.Truncate(l.CreatedAt)) &&
		equalStringPtr(e.Project, l.Project) && e.Type == l.Type && commit == l.Content, nil
}

// leafParts writes the leaf input around the id: the input is before,
// the id's decimal digits, then after.
func leafParts(createdAt time.Time, project *string, typ string, commit [32]byte) (before, after []byte) {
	// The members in RFC 8785's order (their names are ASCII: byte order).
	b := make([]byte, 0, 64+len(LeafFormat))
	b = append(b, LeafFormat+"\n"...)
	b = append(b, `{"createdAt":`...)
	b = appendCanonicalString(b, formatTime(createdAt))
	b = append(b, `,"id":`...)
	before = b
	a := make([]byte, 0, 64+len(typ)+32)
	a = append(a, `,"project":`...)
	if project == nil {
		a = append(a, "null"...)
	} else {
		a = appendCanonicalString(a, *project)
	}
	a = append(a, `,"type":`...)
	a = appendCanonicalString(a, typ)
	a = append(a, "}\n"...)
	return before, append(a, commit[:]...)
}

// hashLeafInput is RFC 9162's leaf hash of before, id and after. The id
// is written as its decimal digits: its canonical JSON for the ids a
// store draws (up to 2^53), and still one number past them.
func hashLeafInput(before []byte, id int64, after []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(before)
	h.Write(strconv.AppendInt(nil, id, 10))
	h.Write(after)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func equalStringPtr(a, b *string) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// formatTime formats t as the API writes times.
func formatTime(t time.Time) string { return t.UTC().Format(flagadmin.TimeLayout) }

// invalid is a validation error of field.
func invalid(field, format string, args ...any) error {
	return &flagadmin.ValidationError{Fields: []flagadmin.FieldError{{Path: field, Message: fmt.Sprintf(format, args...)}}}
}
