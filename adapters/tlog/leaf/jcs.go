package leaf

import (
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"
)

// Canonical JSON, the form the leaf hashes of the event log are computed
// over (docs/verifiable-log.md), is RFC 8785's JSON Canonicalization
// Scheme, written by github.com/gowebpki/jcs: a small, pure-Go, maintained
// implementation of that RFC and nothing else: a leaf must be the one any
// strict RFC 8785 implementation computes, in any language, so the log
// uses a strict one rather than its own reading of the RFC.
//
// RFC 8785 is defined on I-JSON only and refuses the rest (a name given
// twice, an unpaired surrogate, a byte that is not UTF-8, a number beyond
// the range of a double). flagadmin.NormalizeEvent brings every event
// into I-JSON when it is written, imported or followed, so canonicalizing
// a stored event never fails.

// CanonicalJSON returns the JSON text raw in the JSON Canonicalization
// Scheme of RFC 8785: members sorted by their names' UTF-16 code units, no
// white space, numbers in ECMAScript's shortest form, strings with the
// minimal escapes. raw must be one I-JSON value, else the error says why
// it is not.
func CanonicalJSON(raw []byte) ([]byte, error) {
	return AppendCanonicalJSON(nil, raw)
}

// AppendCanonicalJSON appends the canonical form of raw (CanonicalJSON) to dst.
func AppendCanonicalJSON(dst, raw []byte) ([]byte, error) {
	if raw == nil {
		raw = []byte{} // jcs names nil "no data"; empty is "not JSON" like any other
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		return dst, fmt.Errorf("not I-JSON (RFC 8785 canonicalizes I-JSON only): %v", err)
	}
	return append(dst, out...), nil
}

// appendCanonicalString appends s as a canonical JSON string; a byte of s
// that is not UTF-8 is written as U+FFFD (as encoding/json writes it).
func appendCanonicalString(dst []byte, s string) []byte {
	if plainASCII(s) {
		// Printable ASCII but for '"' and '\\' is its own JSON string in every
		// serializer, RFC 8785's included: nothing to escape, nothing to
		// choose (TestCanonicalStringIsTheLibrarys). Most of an event's
		// strings are such; the library writes the others.
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	quoted, _ := json.Marshal(s) // a string always marshals, valid UTF-8
	out, err := jcs.Transform(quoted)
	if err != nil {
		// Unreachable: encoding/json writes a string as I-JSON. Its own
		// text is still the same string.
		return append(dst, quoted...)
	}
	return append(dst, out...)
}

// plainASCII reports whether every byte of s is printable ASCII (0x20 to
// 0x7e) other than '"' and '\\': a string JSON writes as it is, quoted.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
