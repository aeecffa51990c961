package storecache

import (
	"slices"
	"unsafe"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// A page of events as a store returns it is many small allocations (a
// string, a data array, a pointer per field per event, or a few shared
// ones, depending on the store and its driver), each rounded up by the
// runtime to its size class: summing the lengths of the fields underrates
// what the page holds, by how much depending on the store. So the cache
// keeps a compact copy of each page instead (compactPage), made of six
// arrays whose sizes it knows as the runtime allocated them, and releases
// the store's.

// eventFields are the declared fields of an event, which compactPage copies.
var eventFields = flagadmin.EventFields()

// pageHeaderSize is what the *flagadmin.EventPage of a cached page holds:
// its struct, rounded up to the runtime's size class (48 bytes on 64-bit
// platforms).
var pageHeaderSize = int64(allocSize(int(unsafe.Sizeof(flagadmin.EventPage{}))))

// compactPage returns a copy of p in six arrays (the events; their
// strings, data and pre-data bytes; their string pointers; their integer
// pointers; their tags), and the bytes the copy holds: the arrays' sizes
// as allocated, which their capacities give (slices.Grow rounds them up to
// the runtime's size classes). The copy shares nothing with p, whose
// allocations the caller then releases. Its slices are capped at their
// lengths, so that appending to one never writes into another. The strings
// of the copy point into its byte array, which is never written once built.
func compactPage(p *flagadmin.EventPage) (*flagadmin.EventPage, int64) {
	n := pageNeeds{bytes: len(p.Next)}
	for i := range p.Events {
		n.add(&p.Events[i])
	}
	a := pageArena{
		bytes: slices.Grow([]byte(nil), n.bytes),
		strs:  slices.Grow([]string(nil), n.strs),
		ints:  slices.Grow([]int64(nil), n.ints),
		tags:  slices.Grow([]flagadmin.Tag(nil), n.tags),
	}
	events := slices.Grow([]flagadmin.Event(nil), len(p.Events))
	size := pageHeaderSize +
		int64(cap(events))*int64(unsafe.Sizeof(flagadmin.Event{})) +
		int64(cap(a.bytes)) +
		int64(cap(a.strs))*int64(unsafe.Sizeof("")) +
		int64(cap(a.ints))*8 +
		int64(cap(a.tags))*int64(unsafe.Sizeof(flagadmin.Tag{}))
	for i := range p.Events {
		e := p.Events[i]
		for _, f := range eventFields {
			switch f.Kind {
			case flagadmin.FieldText:
				*f.Text(&e) = a.string(*f.Text(&e))
			case flagadmin.FieldTextOrNull, flagadmin.FieldTextOrAbsent:
				*f.TextOrNull(&e) = a.stringPtr(*f.TextOrNull(&e))
			case flagadmin.FieldIntOrNull:
				*f.IntOrNull(&e) = a.int64Ptr(*f.IntOrNull(&e))
			case flagadmin.FieldJSONOrNull:
				*f.JSON(&e) = a.raw(*f.JSON(&e))
			case flagadmin.FieldTags:
				*f.Tags(&e) = a.tagList(*f.Tags(&e))
			}
		}
		events = append(events, e)
	}
	page := &flagadmin.EventPage{Events: events[:len(events):len(events)], Total: p.Total, Next: a.string(p.Next)}
	if len(p.Events) == 0 { // nil or empty, as it was
		page.Events = p.Events
	}
	return page, size
}

// pageNeeds counts the lengths of a compact page's arrays.
type pageNeeds struct{ bytes, strs, ints, tags int }

// add counts e's strings, bytes, pointers and tags.
func (n *pageNeeds) add(e *flagadmin.Event) {
	for _, f := range eventFields {
		switch f.Kind {
		case flagadmin.FieldText:
			n.bytes += len(*f.Text(e))
		case flagadmin.FieldTextOrNull, flagadmin.FieldTextOrAbsent:
			if s := *f.TextOrNull(e); s != nil {
				n.strs++
				n.bytes += len(*s)
			}
		case flagadmin.FieldIntOrNull:
			if *f.IntOrNull(e) != nil {
				n.ints++
			}
		case flagadmin.FieldJSONOrNull:
			n.bytes += len(*f.JSON(e))
		case flagadmin.FieldTags:
			tags := *f.Tags(e)
			n.tags += len(tags)
			for _, t := range tags {
				hex, _ := t.Color.Hex()
				n.bytes += len(t.Type) + len(t.Value) + len(hex)
			}
		}
	}
}

// pageArena is the arrays of a compact page being built. Each has the
// capacity for all of the page, so that appending never moves it.
type pageArena struct {
	bytes []byte
	strs  []string
	ints  []int64
	tags  []flagadmin.Tag
}

// tagList returns a copy of tags in a.tags, their strings in a.bytes; nil
// and empty stay as they are.
func (a *pageArena) tagList(tags []flagadmin.Tag) []flagadmin.Tag {
	if len(tags) == 0 {
		return tags
	}
	start := len(a.tags)
	for _, t := range tags {
		color := t.Color // absent or null: no string
		if hex, ok := color.Hex(); ok {
			color = flagadmin.ColorOf(a.string(hex))
		}
		a.tags = append(a.tags, flagadmin.Tag{Type: a.string(t.Type), Value: a.string(t.Value), Color: color})
	}
	return a.tags[start:len(a.tags):len(a.tags)]
}

// string returns a copy of s in a.bytes.
func (a *pageArena) string(s string) string {
	if s == "" {
		return ""
	}
	start := len(a.bytes)
	a.bytes = append(a.bytes, s...)
	return unsafe.String(&a.bytes[start], len(s))
}

// raw returns a copy of b in a.bytes; nil and empty stay as they are.
func (a *pageArena) raw(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	start := len(a.bytes)
	a.bytes = append(a.bytes, b...)
	return a.bytes[start:len(a.bytes):len(a.bytes)]
}

// stringPtr returns a pointer to a copy of *s in a, or nil.
func (a *pageArena) stringPtr(s *string) *string {
	if s == nil {
		return nil
	}
	a.strs = append(a.strs, a.string(*s))
	return &a.strs[len(a.strs)-1]
}

// int64Ptr returns a pointer to a copy of *n in a, or nil.
func (a *pageArena) int64Ptr(n *int64) *int64 {
	if n == nil {
		return nil
	}
	a.ints = append(a.ints, *n)
	return &a.ints[len(a.ints)-1]
}

// allocSize is the bytes the runtime allocates for an object of n bytes
// (n rounded up to its size class), as the capacity slices.Grow gives.
func allocSize(n int) int {
	if n == 0 {
		return 0
	}
	return cap(slices.Grow([]byte(nil), n))
}
