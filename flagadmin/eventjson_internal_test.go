package flagadmin

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// wantScanLikeEncodingJSON checks that scanRawJSON accepts exactly what
// encoding/json accepts, and writes what json.Compact writes.
func wantScanLikeEncodingJSON(t *testing.T, raw []byte) {
	t.Helper()
	var want bytes.Buffer
	wantErr := json.Compact(&want, raw)
	got, ok := scanRawJSON([]byte("p"), raw)
	if ok != (wantErr == nil) {
		t.Fatalf("scanRawJSON(%q): got ok %v, want %v (encoding/json: %v)", raw, ok, wantErr == nil, wantErr)
	}
	if !ok {
		if string(got) != "p" {
			t.Fatalf("scanRawJSON(%q) rejected it but changed its buffer: %q", raw, got)
		}
		return
	}
	if string(got) != "p"+want.String() {
		t.Fatalf("scanRawJSON(%q):\ngot  %q\nwant %q", raw, got[1:], want.Bytes())
	}
}

// rawJSONCases are JSON texts around every rule of the grammar.
var rawJSONCases = []string{
	``, ` `, `null`, ` null `, `nul`, `nulls`, `true`, `false`, `tru`, `falsey`, `True`,
	`0`, `-0`, `01`, `-01`, `1`, `-`, `--1`, `+1`, `1.`, `1.5`, `.5`, `1e`, `1e5`, `1E+5`, `1e-05`, `1e+`, `1.5e3.2`,
	`123456789012345678901234567890`, `-1.0E-0`, `0x10`, `1 2`, `Infinity`, `NaN`,
	`""`, `"a"`, `"`, `"abc`, `"\"`, `"\\"`, `"\/\b\f\n\r\t"`, `"\a"`, `"\u"`, `"\u12"`, `"\u12345"`, `"\uD83D\uDE00"`,
	`"\uABCD\uabcd\u0000"`, `"\uGHIJ"`, "\"\x00\"", "\"\x1f\"", "\"\x7f\"", "\"\xff\xfe\"", "\"\u2028<&>\"", "\"\t\"",
	`{}`, `{ }`, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{a:1}`, `{"a":1}`, ` { "a" : 1 , "b" : [ ] } `,
	`{"a":{"b":{"c":[1,{"d":null}]}}}`, `{"a" 1}`, `{,}`, `{"a":1}}`, `{"":""}`,
	`[]`, `[ ]`, `[`, `]`, `[1,]`, `[,1]`, `[1 2]`, `[1,,2]`, `[[[]]]`, `[[]`, `[]]`, "[\n1,\r\n2\t]\n",
	"\t[1]\r", "\v[1]", "\u00a0[1]", "[1]\x00", `{"a":"b"}x`, `"a"b`, `[true,false,null]`, `[truefalse]`,
}

func TestScanRawJSON(t *testing.T) {
	for _, c := range rawJSONCases {
		wantScanLikeEncodingJSON(t, []byte(c))
	}
	for _, depth := range []int{9999, 10000, 10001} {
		for _, open := range []string{"[", `{"a":`} {
			closing := "]"
			if open != "[" {
				closing = "}"
			}
			wantScanLikeEncodingJSON(t, []byte(strings.Repeat(open, depth)+"1"+strings.Repeat(closing, depth)))
		}
	}
}

func FuzzScanRawJSON(f *testing.F) {
	for _, c := range rawJSONCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { wantScanLikeEncodingJSON(t, raw) })
}

// TestAppendJSONStringLikeEncodingJSON compares the string escaping with
// encoding/json's on every byte and on the runes around its special cases.
func TestAppendJSONStringLikeEncodingJSON(t *testing.T) {
	var inputs []string
	for c := 0; c < 256; c++ {
		inputs = append(inputs, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	for _, r := range []rune{0x7f, 0x80, 0x7ff, 0x800, 0x2027, 0x2028, 0x2029, 0x202a, 0xd7ff, 0xe000, 0xfffd, 0xffff, 0x10000, 0x10ffff} {
		inputs = append(inputs, string(r), "x"+string(r)+"y")
	}
	inputs = append(inputs, "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x80", "\xe2\x80\xa8\xe2", "")
	for _, s := range inputs {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got)+"\n" != want.String() {
			t.Errorf("appendJSONString(%q): got %s, want %s", s, got, want.Bytes())
		}
	}
}
