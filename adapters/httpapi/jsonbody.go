package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
)

// pathBody names the whole request body in error details.
const pathBody = "body"

// checkJSONBody checks a request body before Huma decodes it into the
// operation's body type, so that what encoding/json would accept silently
// or report in a Go decoder's words is a 400 BadDataError in this API's
// words:
//
//   - a syntax error names its 0-based byte offset, path "body";
//   - invalid UTF-8 in a string, or an escaped lone surrogate, which
//     encoding/json would replace with U+FFFD, names the field;
//   - a value whose JSON type is not its field's (schema) type, such as a
//     string or 10.5 for an integer, names the field; an integral number
//     written 10.0 or 1e2 is an integer (jsonInt decodes it);
//   - a field the schema does not know, where it refuses additional
//     properties, names the field.
//
// Values are not checked against their bounds, enums or lengths: the
// domain validates those with its own messages. It returns no details for
// a body that passes.
func checkJSONBody(body []byte, schema *huma.Schema, reg huma.Registry) []errorDetail {
	if !json.Valid(body) {
		return []errorDetail{syntaxDetail(body)}
	}
	c := bodyChecker{dec: json.NewDecoder(bytes.NewReader(body)), body: body, reg: reg}
	c.dec.UseNumber()
	if err := c.value(nil, schema); err != nil {
		// json.Valid accepted the body, so the decoder cannot fail on it.
		return []errorDetail{{Path: pathBody, Message: "is not valid JSON"}}
	}
	return c.details
}

// syntaxDetail describes the syntax error of a body json.Valid refused.
func syntaxDetail(body []byte) errorDetail {
	var raw json.RawMessage
	err := json.Unmarshal(body, &raw)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return errorDetail{Path: pathBody, Message: "is not valid JSON"}
	}
	off := se.Offset - 1 // Offset counts the bytes read, the offending one included
	switch {
	case se.Offset >= int64(len(body)) && strings.HasPrefix(se.Error(), "unexpected end"):
		return errorDetail{Path: pathBody, Message: fmt.Sprintf("is not valid JSON: it ends at byte offset %d before the value is complete", len(body))}
	case strings.Contains(se.Error(), "max depth"):
		return errorDetail{Path: pathBody, Message: fmt.Sprintf("is not valid JSON: it nests too deeply at byte offset %d", off)}
	case off < 0 || off >= int64(len(body)):
		return errorDetail{Path: pathBody, Message: "is not valid JSON"}
	}
	return errorDetail{Path: pathBody, Message: fmt.Sprintf("is not valid JSON: unexpected %s at byte offset %d", describeByte(body[off]), off)}
}

// describeByte names a byte of a body for a syntax error message.
func describeByte(b byte) string {
	if b > ' ' && b < 0x7f {
		return strconv.QuoteRune(rune(b))
	}
	return fmt.Sprintf("byte 0x%02x", b)
}

// bodyChecker walks a valid JSON body token by token beside its schema.
type bodyChecker struct {
	dec     *json.Decoder
	body    []byte
	reg     huma.Registry
	details []errorDetail
}

func (c *bodyChecker) add(at *bodyPath, msg string) {
	path := at.String()
	if path == "" {
		path = pathBody
	}
	c.details = append(c.details, errorDetail{Path: path, Message: msg})
}

// bodyPath is where a value is in the body: a field of its parent (key)
// or an item (index); nil is the body itself. The path is spelled only
// when a detail names it, so a deeply nested body costs its size, not
// its depth times its size.
type bodyPath struct {
	parent *bodyPath
	key    string
	index  int // an item's index; -1 for a field
}

// field is the path of the member key of the object at p.
func (p *bodyPath) field(key string) *bodyPath { return &bodyPath{parent: p, key: key, index: -1} }

// item is the path of the i-th item of the array at p.
func (p *bodyPath) item(i int) *bodyPath { return &bodyPath{parent: p, index: i} }

// String spells p as details name fields: "a.b[2].c"; "" for the body.
func (p *bodyPath) String() string {
	if p == nil {
		return ""
	}
	var steps []*bodyPath
	for q := p; q != nil; q = q.parent {
		steps = append(steps, q)
	}
	var b strings.Builder
	for i := len(steps) - 1; i >= 0; i-- {
		switch q := steps[i]; {
		case q.index >= 0:
			b.WriteString("[" + strconv.Itoa(q.index) + "]")
		case b.Len() > 0:
			b.WriteString("." + q.key)
		default:
			b.WriteString(q.key)
		}
	}
	return b.String()
}

// resolve follows a schema reference; nil means "anything".
func (c *bodyChecker) resolve(s *huma.Schema) *huma.Schema {
	if s != nil && s.Ref != "" && c.reg != nil {
		return c.reg.SchemaFromRef(s.Ref)
	}
	return s
}

// value checks the next value, at path, against s (nil: any value).
func (c *bodyChecker) value(path *bodyPath, s *huma.Schema) error {
	s = c.resolve(s)
	start := c.dec.InputOffset()
	tok, err := c.dec.Token()
	if err != nil {
		return err
	}
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '{' {
			return c.object(path, c.expect(path, s, huma.TypeObject))
		}
		return c.array(path, c.expect(path, s, huma.TypeArray))
	case string:
		if !validJSONString(c.body[start:c.dec.InputOffset()]) {
			c.add(path, "must be valid UTF-8 text")
		} else {
			c.expect(path, s, huma.TypeString)
		}
	case json.Number:
		c.number(path, s, tok)
	case bool:
		c.expect(path, s, huma.TypeBoolean)
	case nil:
		// null is "absent" for every optional field; the domain decides.
	}
	return nil
}

// expect records at path that the value is not of the type s wants, when
// s wants one and it is not typ. It returns the schema to check the
// value's contents with: s, or nil (anything) once the type is wrong.
func (c *bodyChecker) expect(path *bodyPath, s *huma.Schema, typ string) *huma.Schema {
	if s == nil || s.Type == "" || s.Type == typ {
		return s
	}
	c.add(path, typeMessage(s))
	return nil
}

// array checks the items of an array whose '[' was read.
func (c *bodyChecker) array(path *bodyPath, s *huma.Schema) error {
	var items *huma.Schema
	if s != nil {
		items = s.Items
	}
	for i := 0; c.dec.More(); i++ {
		if err := c.value(path.item(i), items); err != nil {
			return err
		}
	}
	_, err := c.dec.Token() // ]
	return err
}

// number checks a number: any number is a number; an integer must be a
// whole number within the integers a body may hold.
func (c *bodyChecker) number(path *bodyPath, s *huma.Schema, n json.Number) {
	if s == nil {
		return
	}
	switch s.Type {
	case "", huma.TypeNumber:
	case huma.TypeInteger:
		if _, ok := parseJSONInteger(string(n)); !ok {
			c.add(path, typeMessage(s))
		}
	default:
		c.add(path, typeMessage(s))
	}
}

// object checks the members of an object whose '{' was read.
func (c *bodyChecker) object(path *bodyPath, s *huma.Schema) error {
	for c.dec.More() {
		start := c.dec.InputOffset()
		tok, err := c.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		var field *huma.Schema
		fieldPath := path.field(cut(key))
		switch {
		case !validJSONString(c.body[start:c.dec.InputOffset()]):
			c.add(path, "field names must be valid UTF-8 text")
			fieldPath = path
		case s != nil:
			field = s.Properties[key]
			if field == nil && s.AdditionalProperties == false {
				c.add(fieldPath, "is not a field of this body")
			}
		}
		if err := c.value(fieldPath, field); err != nil {
			return err
		}
	}
	_, err := c.dec.Token() // }
	return err
}

// typeMessage says what a value of schema s must be, with the bounds of an
// integer, in the words the domain uses for them.
func typeMessage(s *huma.Schema) string {
	switch s.Type {
	case huma.TypeInteger:
		switch {
		case s.Minimum != nil && s.Maximum != nil:
			return fmt.Sprintf("must be an integer from %d to %d", int64(*s.Minimum), int64(*s.Maximum))
		case s.Minimum != nil:
			return fmt.Sprintf("must be an integer of %d or more", int64(*s.Minimum))
		}
		return "must be an integer"
	case huma.TypeNumber:
		return "must be a number"
	case huma.TypeString:
		return "must be a string"
	case huma.TypeBoolean:
		return "must be true or false"
	case huma.TypeArray:
		return "must be a JSON array"
	case huma.TypeObject:
		return "must be a JSON object"
	}
	return "has the wrong type"
}

// validJSONString reports whether the raw bytes of a JSON string token
// (with any separator before it) are valid UTF-8 whose \u escapes pair
// their surrogates: encoding/json replaces both faults with U+FFFD
// without a word.
func validJSONString(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if i >= len(raw) || raw[i] != 'u' {
			continue // a one-character escape; i is on its character
		}
		r := hex4(raw[i+1:])
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return false // a low half without a high one
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return false
			}
			if low := hex4(raw[i+3:]); low < 0xDC00 || low > 0xDFFF {
				return false
			}
			i += 6
		}
	}
	return true
}

// hex4 decodes the 4 hex digits a \u escape of a valid JSON text has.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	if err != nil {
		return -1
	}
	return rune(n)
}

// parseJSONInteger returns the value of a JSON number if it is an integer
// that fits an int64, in any notation: 10, 10.0, 1e2, 1.5e1, -0.0.
func parseJSONInteger(num string) (int64, bool) {
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		return n, true
	}
	mant, expText, hasExp := strings.Cut(strings.ReplaceAll(num, "E", "e"), "e")
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return 0, true // zero, whatever the exponent
	}
	exp := 0
	if hasExp {
		e, err := strconv.Atoi(expText)
		if err != nil {
			return 0, false // an exponent beyond any int64
		}
		// Far beyond the digits a body can hold, the answer no longer
		// depends on the exponent; the bound keeps the sums below exact.
		exp = max(-1e8, min(e, 1e8))
	}
	exp -= len(frac)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed
	if exp < 0 || len(digits)+exp > 19 {
		return 0, false // a fraction, or beyond int64
	}
	text := digits + strings.Repeat("0", exp)
	if neg {
		text = "-" + text
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// jsonInt is an integer body field that accepts an integral JSON number in
// any notation (10, 10.0, 1e2) as that integer; checkJSONBody has
// refused every other number before it is decoded.
type jsonInt int64

// UnmarshalJSON decodes an integral JSON number.
func (n *jsonInt) UnmarshalJSON(b []byte) error {
	v, ok := parseJSONInteger(string(b))
	if !ok {
		return errors.New("not an integer")
	}
	*n = jsonInt(v)
	return nil
}

// Schema documents a jsonInt as an integer.
func (jsonInt) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeInteger, Format: "int64"}
}

// intPtr converts an optional jsonInt for the domain.
func intPtr(n *jsonInt) *int {
	if n == nil {
		return nil
	}
	v := int(*n)
	return &v
}
