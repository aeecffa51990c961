package leaf

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Canonical JSON, the form the leaf hashes of the event log are computed
// over (docs/verifiable-log.md), is RFC 8785's JSON Canonicalization
// Scheme, written by jsontext.Value.Canonicalize of
// github.com/go-json-experiment/json (the Go team's JSON v2, which Go
// ships as encoding/json/v2 behind an experiment): a leaf must be the one
// any strict RFC 8785 implementation computes, in any language, so the log
// uses a library's rather than its own reading of the RFC. The tests hold
// it to the RFC's vectors and, on any input, to github.com/gowebpki/jcs, a
// small implementation of that RFC and nothing else: both give the same
// bytes or both refuse. It writes an event's data in about a quarter of that
// library's time, without allocating (BenchmarkCanonicalJSON), and the
// leaf is computed for every event written.
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
	start := len(dst)
	v := jsontext.Value(append(dst, raw...)[start:])
	if err := v.Canonicalize(); err != nil {
		return dst, fmt.Errorf("not I-JSON (RFC 8785 canonicalizes I-JSON only): %v", err)
	}
	// The library writes a number beyond a double's range as the largest
	// double; RFC 8785 refuses it. Only a text with that double in its
	// canonical form can hold one.
	if bytes.Contains(v, largestDouble) {
		if n := outOfRange(raw); n != "" {
			return dst, fmt.Errorf("not I-JSON (RFC 8785 canonicalizes I-JSON only): number out of range: %.40s", n)
		}
	}
	return append(dst[:start], v...), nil // v is in place unless it outgrew dst
}

// largestDouble is the canonical form of the largest double, less its sign.
var largestDouble = []byte("1.7976931348623157e+308")

// outOfRange returns the first number of raw, a valid JSON text, beyond
// the range of a double, "" when there is none.
func outOfRange(raw []byte) string {
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			for i++; raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++ // the escaped character is not the string's end
				}
			}
		case c == '-' || '0' <= c && c <= '9':
			j := i + 1
			for j < len(raw) && strings.IndexByte("0123456789.eE+-", raw[j]) >= 0 {
				j++
			}
			if f, _ := strconv.ParseFloat(string(raw[i:j]), 64); math.IsInf(f, 0) {
				return string(raw[i:j])
			}
			i = j - 1
		}
	}
	return ""
}

// appendCanonicalString appends s as a canonical JSON string; a byte of s
// that is not UTF-8 is written as U+FFFD (as encoding/json writes it).
func appendCanonicalString(dst []byte, s string) []byte {
	dst, _ = jsontext.AppendQuote(dst, s) // the error says a byte was not UTF-8, written as U+FFFD
	return dst
}
