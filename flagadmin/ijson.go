package flagadmin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The log's normal form. A leaf commits to the event as the API shows it,
// in RFC 8785's canonical JSON, and RFC 8785 is defined on I-JSON (RFC
// 7493) only: a JSON text beyond it has no canonical form (a strict
// implementation refuses it), or one that does not bind what the API
// shows (9007199254740993 and 9007199254740992 are one double). So an
// event is brought into I-JSON once, when it is written, imported or
// followed (NormalizeEvent), and stored so: what the API shows is then
// exactly what its leaf commits to, and every RFC 8785 implementation
// computes the same leaf. The rules:
//
//   - a number is kept when its decimal value is the value of the nearest
//     double as ECMAScript writes it (1, 1.0, 1e0 and 0.1 are kept);
//     otherwise, beyond double precision (9007199254740993,
//     0.30000000000000000001, 1e-400) or a negative zero, it becomes the
//     nearest double as ECMAScript writes it (9007199254740992, 0.3, 0);
//   - a number beyond the range of a double (1e400) is refused
//     (RefuseOutOfRange: writes through the API and seed files), or becomes
//     the JSON string of its text, "1e400" (OutOfRangeAsString: imported and
//     followed events, which flagadmin records as Unleash holds them rather
//     than lose them);
//   - of the members of an object with one name, the last one is kept, as
//     ECMAScript's JSON.parse and PostgreSQL's jsonb keep it;
//   - an unpaired surrogate (\ud800 without its partner) and a byte that is
//     not UTF-8 become U+FFFD, in data and preData as in the event's text
//     fields (as encoding/json writes them);
//   - createdByUserId beyond ±2^53, which a double cannot hold exactly, is
//     refused (RefuseOutOfRange) or becomes the nearest double
//     (OutOfRangeAsString).
//
// EventContent refuses an event that is not in this form, so the log
// never commits to a value other than the one the API shows: a stored
// event changed to a text outside the form is reported as changed.

// OutOfRange says what NormalizeEvent does with what a double cannot hold
// at all: a number beyond its range in data or preData, and
// createdByUserId beyond ±2^53.
type OutOfRange int

const (
	// RefuseOutOfRange refuses the event with an error of kind
	// ErrValidation that names the field: for events written through the
	// API and seed files, whose writer can say what it means.
	RefuseOutOfRange OutOfRange = iota
	// OutOfRangeAsString writes such a number as the JSON string of its
	// text, and createdByUserId as the nearest double: for events imported
	// or followed from Unleash, which must not be lost.
	OutOfRangeAsString
)

// maxSafeInteger is 2^53: every integer up to it is exactly a double.
const maxSafeInteger = 1 << 53

// NormalizeEvent brings e into the log's normal form (the rules above) and
// returns a short note for each kind of change it made, none when e was in
// the form already. It assigns new values to e's fields and never writes
// through them: the caller's copies of its data, tags and text stay as
// they were. data and preData must be JSON; an error, of kind
// ErrValidation, names the field that is not, or that holds what
// outOfRange refuses.
func NormalizeEvent(e *Event, outOfRange OutOfRange) (changes []string, err error) {
	changes, v := normalizeEventForm(e, outOfRange)
	if v != nil {
		return nil, v
	}
	return changes, nil
}

// normalizeEventForm is NormalizeEvent.
func normalizeEventForm(e *Event, outOfRange OutOfRange) ([]string, *ValidationError) {
	n := eventNormalization{e: e, outOfRange: outOfRange}
	n.data()
	n.createdByUserID()
	n.textFields()
	n.tags()
	if v := n.f.err(); v != nil {
		return nil, v
	}
	return n.notes, nil
}

// eventNormalization is one run of NormalizeEvent on an event: the
// fields it refuses, and a note for each kind of change it makes.
type eventNormalization struct {
	e          *Event
	outOfRange OutOfRange
	f          fieldErrors
	notes      noteSet
}

// data brings the JSON fields (data, preData) into the normal form.
func (n *eventNormalization) data() {
	for _, f := range eventFields {
		if f.Kind != FieldJSONOrNull {
			continue
		}
		raw := f.JSON(n.e)
		if *raw == nil {
			continue
		}
		out, dn, err := normalizeJSON(*raw, n.outOfRange)
		if err != nil {
			n.f.add(f.Name, "%v", err)
			continue
		}
		*raw = out
		for _, note := range dn {
			n.notes.add(f.Name + ": " + note)
		}
	}
}

// createdByUserID refuses, or makes the nearest double, an integer field
// that may be null (createdByUserId) beyond ±2^53.
func (n *eventNormalization) createdByUserID() {
	for _, f := range eventFields {
		if f.Kind != FieldIntOrNull {
			continue
		}
		id := *f.IntOrNull(n.e)
		if id == nil || (*id <= maxSafeInteger && *id >= -maxSafeInteger) {
			continue
		}
		if n.outOfRange == RefuseOutOfRange {
			n.f.add(f.Name, "must be between -2^53 and 2^53 (an integer every JSON reader holds exactly), got %d", *id)
			continue
		}
		v := nearestDoubleInt(*id)
		*f.IntOrNull(n.e) = &v
		n.notes.add(f.Name + ": beyond 2^53: the nearest double")
	}
}

// textFields replaces each byte that is not UTF-8 in the event's text
// fields by U+FFFD. The fields get new values, never written through
// their pointers: the caller's copies stay as they were.
func (n *eventNormalization) textFields() {
	for _, f := range eventFields {
		var s *string
		switch f.Kind {
		case FieldText:
			s = f.Text(n.e)
		case FieldTextOrNull, FieldTextOrAbsent:
			p := f.TextOrNull(n.e)
			if *p == nil || utf8.ValidString(**p) {
				continue
			}
			v := **p
			s, *p = &v, &v // a new value: the caller's string stays
		default:
			continue
		}
		if !utf8.ValidString(*s) {
			*s = validUTF8(*s)
			n.notes.add(f.Name + ": a byte that is not UTF-8: U+FFFD")
		}
	}
}

// tags replaces each byte that is not UTF-8 in the event's tags by
// U+FFFD, in a copy of the tags: the caller's stay as they were.
func (n *eventNormalization) tags() {
	cloned := false
	for i, t := range n.e.Tags {
		if utf8.ValidString(t.Type) && utf8.ValidString(t.Value) {
			continue
		}
		if !cloned {
			n.e.Tags, cloned = slices.Clone(n.e.Tags), true
		}
		n.e.Tags[i].Type, n.e.Tags[i].Value = validUTF8(t.Type), validUTF8(t.Value)
		n.notes.add("tags: a byte that is not UTF-8: U+FFFD")
	}
}

// CheckNormal returns nil when e is in the log's normal form (NormalizeEvent
// would change nothing), else an error of kind ErrValidation naming the
// first field that is not: a leaf commits only to events in that form.
func CheckNormal(e Event) error {
	changes, err := NormalizeEvent(&e, RefuseOutOfRange) // changes e's copy only
	if err != nil {
		return err
	}
	if len(changes) > 0 {
		field, what, _ := strings.Cut(changes[0], ": ")
		return invalid(field, "is not in the log's normal form (I-JSON): %s", what)
	}
	return nil
}

// noteSet is a list of notes without repeats.
type noteSet []string

func (n *noteSet) add(s string) {
	for _, x := range *n {
		if x == s {
			return
		}
	}
	*n = append(*n, s)
}

// nearestDoubleInt returns the integer value of the double nearest v, or
// the largest double below 2^63 when that is 2^63 (beyond int64).
func nearestDoubleInt(v int64) int64 {
	f := float64(v)
	if f >= math.MaxInt64 {
		return int64(math.Nextafter(math.MaxInt64, 0))
	}
	return int64(f)
}

// validUTF8 replaces each byte of s that is not UTF-8 by U+FFFD, as
// encoding/json writes such a string.
func validUTF8(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r) // RuneError for a byte that is not UTF-8
		i += size
	}
	return b.String()
}

// maxNormalDepth bounds the nesting of arrays and objects, as
// encoding/json and RFC 8785 implementations do.
const maxNormalDepth = 10000

// normalizeJSON returns the JSON text raw in the log's normal form: raw
// itself when it is in the form, else a compact text with the members in
// their order, and a note for each kind of change. raw must be one JSON
// value (RFC 8259); the error says where it is not, or where a number
// beyond the range of a double is when outOfRange refuses it.
func normalizeJSON(raw []byte, outOfRange OutOfRange) ([]byte, []string, error) {
	// A first reading only checks: most texts are in the form already,
	// and a leaf hash checks every event it is computed for.
	n := normalizer{in: raw, outOfRange: outOfRange}
	if err := n.run(); err != nil {
		return nil, nil, err
	}
	if len(n.notes) == 0 {
		return raw, nil, nil
	}
	w := normalizer{in: raw, outOfRange: outOfRange, write: true, out: make([]byte, 0, len(raw))}
	if err := w.run(); err != nil {
		return nil, nil, err
	}
	return w.out, w.notes, nil
}

// normalizer reads one JSON text and, when write is set, writes its
// normal form to out.
type normalizer struct {
	in         []byte
	pos        int
	write      bool
	out        []byte
	outOfRange OutOfRange
	notes      noteSet
	// path holds the member names and array indexes down to the value
	// being read, for errors.
	path []pathStep
	// levels holds, per depth, the members of the object being read at
	// that depth (scratch space, reused).
	levels [][]member
}

// run reads the whole text.
func (n *normalizer) run() error {
	n.skipSpace()
	if err := n.value(0); err != nil {
		return err
	}
	n.skipSpace()
	if n.pos != len(n.in) {
		return n.errorf("unexpected %q after the value", n.in[n.pos])
	}
	return nil
}

// put writes b when the normalizer writes.
func (n *normalizer) put(b ...byte) {
	if n.write {
		n.out = append(n.out, b...)
	}
}

// pathStep is one step of a JSON Pointer.
type pathStep struct {
	name  []byte
	index int // -1 for a member
}

// pointer returns the JSON Pointer (RFC 6901) of the value being read.
func (n *normalizer) pointer() string {
	if len(n.path) == 0 {
		return "the top level"
	}
	var b strings.Builder
	for _, s := range n.path {
		b.WriteByte('/')
		if s.index >= 0 {
			b.WriteString(strconv.Itoa(s.index))
		} else {
			b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(string(s.name)))
		}
	}
	return b.String()
}

// errNotJSON marks the errors of text that is not JSON.
var errNotJSON = errors.New("not valid JSON")

func (n *normalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", errNotJSON, n.pos, fmt.Sprintf(format, args...))
}

func (n *normalizer) skipSpace() {
	for n.pos < len(n.in) {
		switch n.in[n.pos] {
		case ' ', '\t', '\n', '\r':
			n.pos++
		default:
			return
		}
	}
}

// value reads the value at n.pos; depth is the number of arrays and
// objects around it.
func (n *normalizer) value(depth int) error {
	if n.pos >= len(n.in) {
		return n.errorf("unexpected end of input")
	}
	switch b := n.in[n.pos]; {
	case b == '{':
		return n.object(depth)
	case b == '[':
		return n.array(depth)
	case b == '"':
		_, err := n.str(false)
		return err
	case b == '-' || (b >= '0' && b <= '9'):
		return n.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if len(n.in)-n.pos >= len(lit) && string(n.in[n.pos:n.pos+len(lit)]) == lit {
				n.pos += len(lit)
				n.put(n.in[n.pos-len(lit) : n.pos]...)
				return nil
			}
		}
		return n.errorf("unexpected %q", b)
	}
}

// member is one member of an object: its name (decoded) and, when the
// normalizer writes, its span in n.out.
type member struct {
	name       []byte
	start, end int
}

func (n *normalizer) object(depth int) error {
	if depth >= maxNormalDepth {
		return n.errorf("nested more than %d levels deep", maxNormalDepth)
	}
	n.pos++ // {
	n.put('{')
	n.skipSpace()
	if n.skip("}") {
		n.put('}')
		return nil
	}
	members, err := n.members(depth)
	if err != nil {
		return err
	}
	n.dropRepeatedNames(members)
	n.levels[depth] = members[:0]
	n.put('}')
	return nil
}

// members reads the members of the object at depth, up to and past its
// }, and returns them (in the scratch space of n.levels[depth]).
func (n *normalizer) members(depth int) ([]member, error) {
	for len(n.levels) <= depth {
		n.levels = append(n.levels, nil)
	}
	members := n.levels[depth][:0]
	n.path = append(n.path, pathStep{index: -1})
	for more := true; more; {
		m, err := n.member(depth, len(members) == 0)
		if err != nil {
			return nil, err
		}
		members = append(members, m)
		if more, err = n.next('}', "an object", "a member"); err != nil {
			return nil, err
		}
	}
	n.path = n.path[:len(n.path)-1]
	return members, nil
}

// member reads one member of an object at depth; its span in n.out
// starts with the comma before it unless it is the first.
func (n *normalizer) member(depth int, first bool) (member, error) {
	if n.pos >= len(n.in) || n.in[n.pos] != '"' {
		return member{}, n.errorf("want a member name in quotes")
	}
	start := len(n.out)
	if !first {
		n.put(',')
	}
	name, err := n.str(true)
	if err != nil {
		return member{}, err
	}
	n.path[len(n.path)-1].name = name
	n.skipSpace()
	if !n.skip(":") {
		return member{}, n.errorf("want : after a member name")
	}
	n.put(':')
	n.skipSpace()
	if err := n.value(depth + 1); err != nil {
		return member{}, err
	}
	return member{name: name, start: start, end: len(n.out)}, nil
}

// next reads what follows an element of an array or a member of an
// object (what, in the errors): a comma and the space after it (more is
// true), or closing, which ends the array or object in.
func (n *normalizer) next(closing byte, in, what string) (more bool, err error) {
	n.skipSpace()
	if n.pos >= len(n.in) {
		return false, n.errorf("unexpected end of input in %s", in)
	}
	switch n.in[n.pos] {
	case closing:
		n.pos++
		return false, nil
	case ',':
		n.pos++
		n.skipSpace()
		return true, nil
	}
	return false, n.errorf("want , or %c after %s", closing, what)
}

// skip moves past the byte at n.pos and reports true when it is one of
// set.
func (n *normalizer) skip(set string) bool {
	if n.pos < len(n.in) && strings.IndexByte(set, n.in[n.pos]) >= 0 {
		n.pos++
		return true
	}
	return false
}

// dropRepeatedNames notes, and removes from n.out when it writes, every
// member of an object (members, the last at the end of n.out) whose name
// a later member repeats: the last one wins.
func (n *normalizer) dropRepeatedNames(members []member) {
	drop := repeatedNames(members)
	if len(drop) == 0 {
		return
	}
	n.notes.add("a member name given twice: the last member kept")
	if n.write {
		n.removeMembers(members, drop)
	}
}

// repeatedNames returns, in order, the indexes of the members whose name
// a later member repeats.
func repeatedNames(members []member) []int {
	var drop []int
	if len(members) <= 16 { // comparing each pair is faster than a map
		for i := range members {
			for j := i + 1; j < len(members); j++ {
				if bytes.Equal(members[j].name, members[i].name) {
					drop = append(drop, i)
					break
				}
			}
		}
		return drop
	}
	last := make(map[string]int, len(members))
	for i, m := range members {
		last[string(m.name)] = i
	}
	for i, m := range members {
		if last[string(m.name)] != i {
			drop = append(drop, i)
		}
	}
	return drop
}

// removeMembers rewrites the object's members in n.out, from its first
// member on, without the members at the indexes drop (in order).
func (n *normalizer) removeMembers(members []member, drop []int) {
	objStart := members[0].start
	kept := make([]byte, 0, len(n.out)-objStart)
	first := true
	for i, m := range members {
		if len(drop) > 0 && drop[0] == i {
			drop = drop[1:]
			continue
		}
		text := n.out[m.start:m.end]
		if i > 0 {
			text = text[1:] // its comma
		}
		if !first {
			kept = append(kept, ',')
		}
		first = false
		kept = append(kept, text...)
	}
	n.out = append(n.out[:objStart], kept...)
}

func (n *normalizer) array(depth int) error {
	if depth >= maxNormalDepth {
		return n.errorf("nested more than %d levels deep", maxNormalDepth)
	}
	n.pos++ // [
	n.put('[')
	n.skipSpace()
	if n.skip("]") {
		n.put(']')
		return nil
	}
	n.path = append(n.path, pathStep{index: 0})
	for {
		if err := n.value(depth + 1); err != nil {
			return err
		}
		more, err := n.next(']', "an array", "an array element")
		if err != nil {
			return err
		}
		if !more {
			n.path = n.path[:len(n.path)-1]
			n.put(']')
			return nil
		}
		n.put(',')
		n.path[len(n.path)-1].index++
	}
}

// str reads the string at n.pos and writes it: as it is when it is
// I-JSON, else with each unpaired surrogate and each byte that is not
// UTF-8 replaced by U+FFFD. It returns the string, decoded, when decode is
// set (a member name).
func (n *normalizer) str(decode bool) ([]byte, error) {
	start := n.pos
	clean, escaped, err := n.scanString()
	if err != nil {
		return nil, err
	}
	text := n.in[start:n.pos]
	content := text[1 : len(text)-1]
	switch {
	case !clean:
		n.notes.add("an unpaired surrogate or a byte that is not UTF-8: U+FFFD")
		s := decodeLenient(content)
		if n.write {
			n.out = AppendJSONString(n.out, s)
		}
		return []byte(s), nil
	case !decode:
		n.put(text...)
		return nil, nil
	case !escaped:
		n.put(text...)
		return content, nil
	}
	n.put(text...)
	var s string
	if err := json.Unmarshal(text, &s); err != nil {
		return nil, n.errorf("%v", err)
	}
	return []byte(s), nil
}

// scanString moves past the string at n.pos, checking it against RFC
// 8259's grammar. clean is false when the string holds an unpaired
// surrogate or a byte that is not UTF-8; escaped is true when it holds a
// \ escape.
func (n *normalizer) scanString() (clean, escaped bool, err error) {
	n.pos++ // "
	clean = true
	for {
		if n.pos >= len(n.in) {
			return false, false, n.errorf("unexpected end of input in a string")
		}
		switch b := n.in[n.pos]; {
		case b == '"':
			n.pos++
			return clean, escaped, nil
		case b == '\\':
			escaped = true
			lone, err := n.escape()
			if err != nil {
				return false, false, err
			}
			clean = clean && !lone
		case b < 0x20:
			return false, false, n.errorf("control character %#02x in a string", b)
		case b < utf8.RuneSelf:
			n.pos++
		default:
			r, size := utf8.DecodeRune(n.in[n.pos:])
			if r == utf8.RuneError && size == 1 {
				clean = false
			}
			n.pos += size
		}
	}
}

// escape moves past the escape at n.pos, and past the low surrogate's
// escape after a high surrogate's; lone is true for a surrogate without
// its partner.
func (n *normalizer) escape() (lone bool, err error) {
	if n.pos+1 >= len(n.in) {
		return false, n.errorf("unexpected end of input in an escape")
	}
	switch esc := n.in[n.pos+1]; esc {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		n.pos += 2
		return false, nil
	case 'u':
		n.pos += 2
		return n.unicodeEscape()
	default:
		return false, n.errorf("unknown escape \\%c", esc)
	}
}

// unicodeEscape moves past the four hex digits of a \u escape at n.pos,
// and past the escape of the low surrogate that follows a high one; lone
// is true for a surrogate without its partner.
func (n *normalizer) unicodeEscape() (lone bool, err error) {
	if n.pos+4 > len(n.in) || !isHex4(n.in[n.pos:n.pos+4]) {
		return false, n.errorf("\\u must be followed by four hex digits")
	}
	u := hex4(n.in[n.pos : n.pos+4])
	n.pos += 4
	switch {
	case u >= 0xd800 && u < 0xdc00: // a high surrogate
		if !n.lowSurrogateFollows() {
			return true, nil
		}
		n.pos += len(`\udc00`)
		return false, nil
	case u >= 0xdc00 && u < 0xe000: // a low surrogate without a high one
		return true, nil
	}
	return false, nil
}

// lowSurrogateFollows reports whether the input at n.pos is the \u escape
// of a low surrogate.
func (n *normalizer) lowSurrogateFollows() bool {
	in := n.in[n.pos:]
	if len(in) < 6 || in[0] != '\\' || in[1] != 'u' || !isHex4(in[2:6]) {
		return false
	}
	u := hex4(in[2:6])
	return u >= 0xdc00 && u < 0xe000
}

// decodeLenient returns the string a JSON string's content (checked,
// without its quotes) writes, with each unpaired surrogate and each byte
// that is not UTF-8 as U+FFFD.
func decodeLenient(content []byte) string {
	var units []uint16
	for i := 0; i < len(content); {
		b := content[i]
		switch {
		case b == '\\':
			switch esc := content[i+1]; esc {
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
				units = append(units, hex4(content[i+2:i+6]))
				i += 4
			default: // " \ /
				units = append(units, uint16(esc))
			}
			i += 2
		case b < utf8.RuneSelf:
			units = append(units, uint16(b))
			i++
		default:
			r, size := utf8.DecodeRune(content[i:]) // RuneError for a byte that is not UTF-8
			units = utf16.AppendRune(units, r)
			i += size
		}
	}
	return string(utf16.Decode(units)) // an unpaired surrogate decodes as U+FFFD
}

// hex4 returns the value of four hex digits (checked by isHex4).
func hex4(b []byte) uint16 {
	var u uint16
	for _, c := range b {
		switch {
		case c >= 'a':
			c -= 'a' - 10
		case c >= 'A':
			c -= 'A' - 10
		default:
			c -= '0'
		}
		u = u<<4 | uint16(c)
	}
	return u
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// number reads the number at n.pos, after checking it against RFC 8259's
// grammar (strconv accepts more), and writes its normal form.
func (n *normalizer) number() error {
	start := n.pos
	if err := n.scanNumber(); err != nil {
		return err
	}
	text := n.in[start:n.pos]
	if len(text) <= 15 && isInteger(text) && string(text) != "-0" {
		// An integer of at most 15 digits is a double exactly, written so.
		n.put(text...)
		return nil
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil || math.IsInf(f, 0) {
		// Syntax was checked: the number is beyond the range of a double.
		return n.beyondRange(string(text))
	}
	n.nearestDouble(text, f)
	return nil
}

// scanNumber moves past the number at n.pos, checking it against RFC
// 8259's grammar: a sign, an integer part without leading zeros, then a
// fraction and an exponent, each optional and with at least one digit.
func (n *normalizer) scanNumber() error {
	n.skip("-")
	switch {
	case n.skip("0"):
	case n.pos < len(n.in) && n.in[n.pos] >= '1' && n.in[n.pos] <= '9':
		n.digits()
	default:
		return n.errorf("a number needs a digit")
	}
	if n.skip(".") && n.digits() == 0 {
		return n.errorf("a fraction needs a digit")
	}
	if n.skip("eE") {
		n.skip("+-")
		if n.digits() == 0 {
			return n.errorf("an exponent needs a digit")
		}
	}
	return nil
}

// beyondRange refuses the number text, beyond the range of a double, or
// writes it as the string of its text, as n.outOfRange says.
func (n *normalizer) beyondRange(text string) error {
	if n.outOfRange == RefuseOutOfRange {
		return fmt.Errorf("the number %s at %s is beyond the range of a double (I-JSON): give it as a string", QuoteInput(text), n.pointer())
	}
	n.notes.add("a number beyond the range of a double: the string of its text")
	if n.write {
		n.out = strconv.AppendQuote(n.out, text) // digits, sign, '.', 'e' and '+' need no escape
	}
	return nil
}

// nearestDouble writes the number text as it is when its decimal value is
// that of f, its nearest double, as ECMAScript writes it; else it writes
// f so.
func (n *normalizer) nearestDouble(text []byte, f float64) {
	es := string(appendECMAScriptNumber(nil, f)) // finite
	if sameDecimal(string(text), es) {
		n.put(text...)
		return
	}
	if _, digits, _, _ := decimalOf(string(text)); digits == "" {
		n.notes.add("a negative zero: 0")
	} else {
		n.notes.add("a number beyond double precision: the nearest double")
	}
	if n.write {
		n.out = append(n.out, es...)
	}
}

// isInteger reports whether the JSON number b is an integer written
// without fraction or exponent.
func isInteger(b []byte) bool {
	for i, c := range b {
		if (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return false
		}
	}
	return true
}

func (n *normalizer) digits() int {
	c := 0
	for n.pos < len(n.in) && n.in[n.pos] >= '0' && n.in[n.pos] <= '9' {
		n.pos++
		c++
	}
	return c
}

// sameDecimal reports whether the JSON numbers a and b have the same
// decimal value, a negative zero being another value than 0.
func sameDecimal(a, b string) bool {
	an, ad, ae, aok := decimalOf(a)
	bn, bd, be, bok := decimalOf(b)
	return aok && bok && an == bn && ad == bd && ae == be
}

// decimalOf returns the value of the JSON number s as 0.digits × 10^exp,
// digits without leading or trailing zeros ("" for zero); ok is false
// when the exponent does not fit an int64.
func decimalOf(s string) (neg bool, digits string, exp int64, ok bool) {
	neg = strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mantissa, e, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		var err error
		if exp, err = strconv.ParseInt(e, 10, 64); err != nil {
			return neg, "", 0, false
		}
	}
	intPart, frac, _ := strings.Cut(mantissa, ".")
	digits = intPart + frac
	point := int64(len(intPart))
	trimmed := strings.TrimLeft(digits, "0")
	point -= int64(len(digits) - len(trimmed))
	digits = strings.TrimRight(trimmed, "0")
	if digits == "" {
		return neg, "", 0, true
	}
	if (exp > 0 && point > math.MaxInt64-exp) || (exp < 0 && point < math.MinInt64-exp) {
		return neg, "", 0, false
	}
	return neg, digits, point + exp, true
}

// normalizingStore is the Service's store: every event the Service
// writes, through any of the four write methods, is brought into the
// log's normal form first (RefuseOutOfRange), whoever built it. Events
// the Service builds from checked input are in it already; an event
// described by the caller (AppendEvent, seed files) was normalized when
// it was checked, and is left as it is here.
type normalizingStore struct {
	Store
}

// normalEvents returns events in the normal form: events itself when
// they are in it already, else a copy.
func normalEvents(events []Event) ([]Event, error) {
	out := events
	for i := range events {
		e := events[i]
		changes, err := NormalizeEvent(&e, RefuseOutOfRange)
		if err != nil {
			return nil, err
		}
		if len(changes) > 0 {
			if &out[0] == &events[0] {
				out = slices.Clone(events)
			}
			out[i] = e
		}
	}
	return out, nil
}

func (s normalizingStore) Write(ctx context.Context, b *Batch) error {
	events, err := normalEvents(b.Events)
	if err != nil {
		return err
	}
	c := *b // b stays as it is unless the write succeeds
	c.Events = events
	if then := b.Then; then != nil {
		c.Then = func(b *Batch) ([]Event, error) {
			events, err := then(b)
			if err != nil {
				return nil, err
			}
			return normalEvents(events)
		}
	}
	if err := s.Store.Write(ctx, &c); err != nil {
		return err
	}
	c.Then = b.Then
	*b = c
	return nil
}

func (s normalizingStore) UpdateFeature(ctx context.Context, name string, fn func(*Feature) (*Event, error)) error {
	return s.Store.UpdateFeature(ctx, name, func(f *Feature) (*Event, error) {
		e, err := fn(f)
		if err != nil || e == nil {
			return e, err
		}
		if _, err := NormalizeEvent(e, RefuseOutOfRange); err != nil {
			return nil, err
		}
		return e, nil
	})
}

func (s normalizingStore) DeleteUser(ctx context.Context, id int64, fn func(User) (Event, error)) error {
	return s.Store.DeleteUser(ctx, id, func(u User) (Event, error) {
		e, err := fn(u)
		if err != nil {
			return e, err
		}
		_, err = NormalizeEvent(&e, RefuseOutOfRange)
		return e, err
	})
}

func (s normalizingStore) DeleteToken(ctx context.Context, hash string, fn func(APIToken) (Event, error)) error {
	return s.Store.DeleteToken(ctx, hash, func(t APIToken) (Event, error) {
		e, err := fn(t)
		if err != nil {
			return e, err
		}
		_, err = NormalizeEvent(&e, RefuseOutOfRange)
		return e, err
	})
}

// appendECMAScriptNumber appends finite f as ECMAScript's
// Number.prototype.toString writes it (the form RFC 8785 gives numbers):
// the shortest decimal that reads back as f, 0 for -0, in fixed notation
// from 1e-7 to 1e21, else as d.ddde±x.
func appendECMAScriptNumber(dst []byte, f float64) []byte {
	switch {
	case f == 0:
		return append(dst, '0')
	case f < 0:
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits d1.d2d3...e±x.
	var scratch [32]byte
	mantissa, exp, _ := bytes.Cut(strconv.AppendFloat(scratch[:0], f, 'e', -1, 64), []byte{'e'})
	digits := append([]byte{mantissa[0]}, bytes.TrimPrefix(mantissa[1:], []byte{'.'})...)
	x, _ := strconv.Atoi(string(exp))
	k, n := len(digits), x+1 // the value is 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		dst = append(dst, bytes.Repeat([]byte{'0'}, n-k)...)
	case 0 < n && n <= 21:
		dst = append(append(append(dst, digits[:n]...), '.'), digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(append(dst, "0."...), bytes.Repeat([]byte{'0'}, -n)...)
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(append(dst, '.'), digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}
