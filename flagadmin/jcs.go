package flagadmin

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// This file writes JSON in the JSON Canonicalization Scheme (JCS, RFC
// 8785): the form the leaf hashes of the event log are computed over
// (docs/verifiable-log.md). It is written here, with the standard library only,
// because the leaf hash is a rule of the domain; its tests hold it to RFC
// 8785's own examples and to a separate implementation.
//
// RFC 8785 canonicalizes I-JSON (RFC 7493) and leaves other input as an
// error. A leaf hash cannot fail on an event a store holds, so the few
// JSON texts outside I-JSON get the value ECMAScript's JSON.parse gives
// them, written as RFC 8785 writes that value (RFC 8785 is defined as
// ECMAScript's serialization):
//
//   - an object with a name twice keeps the last member, as JSON.parse
//     does (and as PostgreSQL's jsonb and MySQL's JSON types store it);
//   - a number beyond the range of a double is ±Infinity, which
//     JSON.stringify writes as null; one below it is 0;
//   - an unpaired surrogate (\ud800 without its partner) is written as its
//     \u escape with lower-case hex digits, as ES2019's JSON.stringify
//     does; an invalid UTF-8 byte in a string reads as U+FFFD.
//
// So the canonical form depends only on the JSON value, never on how a
// store wrote it down: key order, white space, escapes and number
// notation (1e2, 100, 100.0) all give the same bytes.

// CanonicalJSON returns the JSON text raw in the JSON Canonicalization
// Scheme of RFC 8785: members sorted by their names' UTF-16 code units, no
// white space, numbers in ECMAScript's shortest form, strings with the
// minimal escapes. raw must be one JSON value (RFC 8259), else the error
// says where it is not; the handling of text outside I-JSON is described
// in this file's comment.
func CanonicalJSON(raw []byte) ([]byte, error) {
	return AppendCanonicalJSON(nil, raw)
}

// AppendCanonicalJSON appends the canonical form of raw (CanonicalJSON) to dst.
func AppendCanonicalJSON(dst, raw []byte) ([]byte, error) {
	c := canonicalizers.Get().(*canonicalizer)
	defer canonicalizers.Put(c)
	c.in, c.pos = raw, 0
	defer func() { c.in = nil }()
	c.skipSpace()
	out, err := c.value(dst, 0)
	if err != nil {
		return dst, err
	}
	c.skipSpace()
	if c.pos != len(c.in) {
		return dst, c.errorf("unexpected %q after the value", c.in[c.pos])
	}
	return out, nil
}

// maxCanonicalDepth bounds the nesting of arrays and objects, as
// encoding/json does.
const maxCanonicalDepth = 10000

// canonicalizers keeps canonicalizers for reuse: their scratch space
// grows to the size of the texts they read, and a leaf hash is computed
// for every event written.
var canonicalizers = sync.Pool{New: func() any { return new(canonicalizer) }}

// canonicalizer reads one JSON text and writes its canonical form.
type canonicalizer struct {
	in  []byte
	pos int
	// units is scratch space for decoding strings.
	units []uint16
	// levels holds, per depth, the scratch space of the object being read
	// at that depth (at most one at a time): its members' names and
	// values, which are sorted before they are written.
	levels []objectScratch
}

// objectScratch is the scratch space of one depth.
type objectScratch struct {
	names   []uint16
	values  []byte
	members []member
}

// member is one name and value of an object, as spans of its level's
// names and values.
type member struct {
	nameStart, nameEnd   int
	valueStart, valueEnd int
}

// errNotJSON marks every error of CanonicalJSON.
var errNotJSON = errors.New("not valid JSON")

func (c *canonicalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", errNotJSON, c.pos, fmt.Sprintf(format, args...))
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// value appends the canonical form of the value at c.pos; depth is the
// number of arrays and objects around it.
func (c *canonicalizer) value(dst []byte, depth int) ([]byte, error) {
	if c.pos >= len(c.in) {
		return dst, c.errorf("unexpected end of input")
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		return c.object(dst, depth)
	case b == '[':
		return c.array(dst, depth)
	case b == '"':
		units, err := c.str(c.units[:0])
		c.units = units
		if err != nil {
			return dst, err
		}
		return appendCanonicalUnits(dst, units), nil
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number(dst)
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if len(c.in)-c.pos >= len(lit) && string(c.in[c.pos:c.pos+len(lit)]) == lit {
				c.pos += len(lit)
				return append(dst, lit...), nil
			}
		}
		return dst, c.errorf("unexpected %q", b)
	}
}

func (c *canonicalizer) object(dst []byte, depth int) ([]byte, error) {
	if depth >= maxCanonicalDepth {
		return dst, c.errorf("nested more than %d levels deep", maxCanonicalDepth)
	}
	c.pos++ // {
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		return append(dst, "{}"...), nil
	}
	if len(c.levels) <= depth {
		c.levels = append(c.levels, make([]objectScratch, depth+1-len(c.levels))...)
	}
	lv := &c.levels[depth]
	lv.names, lv.values, lv.members = lv.names[:0], lv.values[:0], lv.members[:0]
	for {
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return dst, c.errorf("want a member name in quotes")
		}
		m := member{nameStart: len(lv.names), valueStart: len(lv.values)}
		names, err := c.str(lv.names)
		lv.names = names
		if err != nil {
			return dst, err
		}
		m.nameEnd = len(lv.names)
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return dst, c.errorf("want : after a member name")
		}
		c.pos++
		c.skipSpace()
		// Nested objects use the levels below: lv stays valid unless
		// c.levels grows, so it is looked up again after the value.
		values, err := c.value(lv.values, depth+1)
		lv = &c.levels[depth]
		lv.values = values
		if err != nil {
			return dst, err
		}
		m.valueEnd = len(lv.values)
		lv.members = append(lv.members, m)
		c.skipSpace()
		if c.pos >= len(c.in) {
			return dst, c.errorf("unexpected end of input in an object")
		}
		if c.in[c.pos] == '}' {
			c.pos++
			break
		}
		if c.in[c.pos] != ',' {
			return dst, c.errorf("want , or } after a member")
		}
		c.pos++
		c.skipSpace()
	}
	name := func(m member) []uint16 { return lv.names[m.nameStart:m.nameEnd] }
	// A stable sort keeps members of one name in their order: the last wins.
	slices.SortStableFunc(lv.members, func(a, b member) int { return slices.Compare(name(a), name(b)) })
	dst = append(dst, '{')
	first := true
	for i, m := range lv.members {
		if i+1 < len(lv.members) && slices.Equal(name(m), name(lv.members[i+1])) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendCanonicalUnits(dst, name(m))
		dst = append(dst, ':')
		dst = append(dst, lv.values[m.valueStart:m.valueEnd]...)
	}
	return append(dst, '}'), nil
}

func (c *canonicalizer) array(dst []byte, depth int) ([]byte, error) {
	if depth >= maxCanonicalDepth {
		return dst, c.errorf("nested more than %d levels deep", maxCanonicalDepth)
	}
	c.pos++ // [
	c.skipSpace()
	dst = append(dst, '[')
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		return append(dst, ']'), nil
	}
	for {
		var err error
		if dst, err = c.value(dst, depth+1); err != nil {
			return dst, err
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return dst, c.errorf("unexpected end of input in an array")
		}
		if c.in[c.pos] == ']' {
			c.pos++
			return append(dst, ']'), nil
		}
		if c.in[c.pos] != ',' {
			return dst, c.errorf("want , or ] after an array element")
		}
		dst = append(dst, ',')
		c.pos++
		c.skipSpace()
	}
}

// str decodes the string at c.pos into UTF-16 code units appended to units.
func (c *canonicalizer) str(units []uint16) ([]uint16, error) {
	c.pos++ // "
	for {
		if c.pos >= len(c.in) {
			return units, c.errorf("unexpected end of input in a string")
		}
		b := c.in[c.pos]
		switch {
		case b == '"':
			c.pos++
			return units, nil
		case b == '\\':
			if c.pos+1 >= len(c.in) {
				return units, c.errorf("unexpected end of input in an escape")
			}
			esc := c.in[c.pos+1]
			c.pos += 2
			switch esc {
			case '"', '\\', '/':
				units = append(units, uint16(esc))
			case 'b':
				units = append(units, '\b')
			case 'f':
				units = append(units, '\f')
			case 'n':
				units = append(units, '\n')
			case 'r':
				units = append(units, '\r')
			case 't':
				units = append(units, '\t')
			case 'u':
				if c.pos+4 > len(c.in) {
					return units, c.errorf("unexpected end of input in a \\u escape")
				}
				u, err := strconv.ParseUint(string(c.in[c.pos:c.pos+4]), 16, 16)
				if err != nil || !isHex4(c.in[c.pos:c.pos+4]) {
					return units, c.errorf("\\u must be followed by four hex digits")
				}
				units = append(units, uint16(u))
				c.pos += 4
			default:
				c.pos -= 2
				return units, c.errorf("unknown escape \\%c", esc)
			}
		case b < 0x20:
			return units, c.errorf("control character %#02x in a string", b)
		case b < utf8.RuneSelf:
			units = append(units, uint16(b))
			c.pos++
		default:
			r, size := utf8.DecodeRune(c.in[c.pos:])
			c.pos += size // an invalid byte reads as U+FFFD, size 1
			units = utf16.AppendRune(units, r)
		}
	}
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// number appends the canonical form of the number at c.pos, after
// checking it against RFC 8259's grammar (strconv accepts more).
func (c *canonicalizer) number(dst []byte) ([]byte, error) {
	start := c.pos
	if c.in[c.pos] == '-' {
		c.pos++
	}
	switch {
	case c.pos < len(c.in) && c.in[c.pos] == '0':
		c.pos++
	case c.pos < len(c.in) && c.in[c.pos] >= '1' && c.in[c.pos] <= '9':
		c.digits()
	default:
		return dst, c.errorf("a number needs a digit")
	}
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		c.pos++
		if c.digits() == 0 {
			return dst, c.errorf("a fraction needs a digit")
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		c.pos++
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if c.digits() == 0 {
			return dst, c.errorf("an exponent needs a digit")
		}
	}
	text := c.in[start:c.pos]
	if digits := bytes.TrimPrefix(text, []byte("-")); len(digits) <= 15 && isDigits(digits) {
		// An integer of at most 15 digits is exact in a double and
		// written as it is (but -0 as 0).
		if string(text) == "-0" {
			return append(dst, '0'), nil
		}
		return append(dst, text...), nil
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return dst, c.errorf("malformed number")
	}
	return appendCanonicalNumber(dst, f), nil
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (c *canonicalizer) digits() int {
	n := 0
	for c.pos < len(c.in) && c.in[c.pos] >= '0' && c.in[c.pos] <= '9' {
		c.pos++
		n++
	}
	return n
}

// appendCanonicalNumber appends f as RFC 8785 writes a number: ECMAScript's
// Number.prototype.toString, the shortest decimal that reads back as f (0
// for -0). NaN and ±Infinity, which JSON cannot hold, are written null, as
// JSON.stringify writes them.
func appendCanonicalNumber(dst []byte, f float64) []byte {
	switch {
	case f == 0:
		return append(dst, '0')
	case math.IsNaN(f) || math.IsInf(f, 0):
		return append(dst, "null"...)
	case f < 0:
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits d1.d2d3...e±x, as ECMAScript chooses them.
	var scratch [32]byte
	e := strconv.AppendFloat(scratch[:0], f, 'e', -1, 64)
	mantissa, exp, _ := cutByte(e, 'e')
	var buf [32]byte
	digits := append(buf[:0], mantissa[0])
	if len(mantissa) > 2 {
		digits = append(digits, mantissa[2:]...)
	}
	x, _ := strconv.Atoi(string(exp))
	k, n := len(digits), x+1 // the value is 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, "0."...)
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// cutByte splits b around the first c.
func cutByte(b []byte, c byte) (before, after []byte, found bool) {
	for i, x := range b {
		if x == c {
			return b[:i], b[i+1:], true
		}
	}
	return b, nil, false
}

// appendCanonicalString appends s as a canonical JSON string; an invalid
// UTF-8 byte is written as U+FFFD (as encoding/json writes it).
func appendCanonicalString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			dst = appendCanonicalASCII(dst, b)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		dst = utf8.AppendRune(dst, r) // RuneError for an invalid byte
		i += size
	}
	return append(dst, '"')
}

// appendCanonicalUnits appends a string given as UTF-16 code units as a
// canonical JSON string: pairs of surrogates as their character in UTF-8,
// an unpaired surrogate as its \u escape.
func appendCanonicalUnits(dst []byte, units []uint16) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(units); i++ {
		u := units[i]
		switch {
		case u < utf8.RuneSelf:
			dst = appendCanonicalASCII(dst, byte(u))
		case utf16.IsSurrogate(rune(u)):
			if u < 0xdc00 && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] <= 0xdfff {
				dst = utf8.AppendRune(dst, utf16.DecodeRune(rune(u), rune(units[i+1])))
				i++
				continue
			}
			dst = append(dst, '\\', 'u', hexDigit(u>>12), hexDigit(u>>8), hexDigit(u>>4), hexDigit(u))
		default:
			dst = utf8.AppendRune(dst, rune(u))
		}
	}
	return append(dst, '"')
}

// appendCanonicalASCII appends one ASCII character of a string with RFC
// 8785's escapes: the two-character ones for \b \t \n \f \r " and \, \u00xx
// for the other control characters, the rest as it is.
func appendCanonicalASCII(dst []byte, b byte) []byte {
	switch b {
	case '"', '\\':
		return append(dst, '\\', b)
	case '\b':
		return append(dst, '\\', 'b')
	case '\t':
		return append(dst, '\\', 't')
	case '\n':
		return append(dst, '\\', 'n')
	case '\f':
		return append(dst, '\\', 'f')
	case '\r':
		return append(dst, '\\', 'r')
	}
	if b < 0x20 {
		return append(dst, '\\', 'u', '0', '0', hexDigit(uint16(b)>>4), hexDigit(uint16(b)))
	}
	return append(dst, b)
}

func hexDigit(u uint16) byte { return "0123456789abcdef"[u&0xf] }
