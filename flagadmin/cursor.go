package flagadmin

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"time"
)

// Keyset paging of the query-string search. A page answered by offset or
// by cursor that is not the last one names the position of its last event
// as a cursor (opaque to clients); the next page is the matches after that
// position in the order of CompareEvents. New events sort before the first
// page (their createdAt is the server time, their id larger), so a walk by
// cursor visits every event that matched when it began exactly once.

// EventPosition is where an event stands in the order of the event search:
// createdAt (whole milliseconds, UTC) then id, both descending.
type EventPosition struct {
	CreatedAt time.Time
	ID        int64
}

// PositionOf returns the position of e.
func PositionOf(e Event) EventPosition {
	return EventPosition{CreatedAt: Truncate(e.CreatedAt), ID: e.ID}
}

// Follows reports whether e comes after the position p in the order of
// CompareEvents: created before p, or at the same millisecond with a
// smaller id.
func (p EventPosition) Follows(e Event) bool {
	ms, at := e.CreatedAt.UnixMilli(), p.CreatedAt.UnixMilli()
	return ms < at || (ms == at && e.ID < p.ID)
}

// AfterCursor reports whether e is on or after the page q.After starts:
// always when q.After is nil. Together with Matches it is what a store's
// page is drawn from; Total ignores it (like Limit and Offset).
func (q EventQuery) AfterCursor(e Event) bool {
	return q.After == nil || q.After.Follows(e)
}

// cursorVersion is the first byte of every cursor this version writes.
// A cursor of another version, or that is not one, is a 400 on after.
const cursorVersion = 1

// cursorLength is the length of a decoded cursor: the version, the
// position's Unix milliseconds and id (8 bytes each, big-endian), and a
// CRC-32 (Castagnoli) of the 17 bytes before it.
const cursorLength = 1 + 8 + 8 + 4

var cursorCRC = crc32.MakeTable(crc32.Castagnoli)

// EncodeCursor returns the cursor of position p: opaque to clients,
// URL-safe base64 without padding, versioned, with a checksum that turns
// away a string this server did not write.
func EncodeCursor(p EventPosition) string {
	b := make([]byte, 0, cursorLength)
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(p.CreatedAt.UnixMilli()))
	b = binary.BigEndian.AppendUint64(b, uint64(p.ID))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, cursorCRC))
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor decodes a cursor EncodeCursor wrote. Anything else (not
// base64url, another length or version, a wrong checksum, an id below 1)
// is a *ValidationError naming param.
func ParseCursor(param, raw string) (EventPosition, error) {
	bad := invalid(param, "is not a cursor of this server: use the URL of a Link rel=\"next\" header as it is")
	if len(raw) != base64.RawURLEncoding.EncodedLen(cursorLength) {
		return EventPosition{}, bad
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(raw)
	if err != nil || len(b) != cursorLength || b[0] != cursorVersion {
		return EventPosition{}, bad
	}
	if crc32.Checksum(b[:17], cursorCRC) != binary.BigEndian.Uint32(b[17:]) {
		return EventPosition{}, bad
	}
	ms, id := int64(binary.BigEndian.Uint64(b[1:9])), int64(binary.BigEndian.Uint64(b[9:17]))
	if id < 1 {
		return EventPosition{}, bad
	}
	return EventPosition{CreatedAt: time.UnixMilli(ms).UTC(), ID: id}, nil
}

// parseAfter sets q.After from the after parameter raw ("" for none). A
// cursor goes with offset 0 only: both name where the page starts.
func parseAfter(raw string, q *EventQuery) error {
	if raw == "" {
		return nil
	}
	pos, err := ParseCursor("after", raw)
	if err != nil {
		return err
	}
	if q.Offset != 0 {
		return invalid("after", "cannot be combined with an offset other than 0: a cursor already says where the page starts")
	}
	q.After = &pos
	return nil
}

// nextPage sets page.Next when the page q selected is not the last one.
// A page by offset knows it from the total; a page by cursor (whose
// matches before it the total also counts) was read with one event more
// than asked for (see Service.SearchEvents), which is dropped here.
func nextPage(q EventQuery, page *EventPage) {
	more := false
	if q.After == nil {
		more = len(page.Events) > 0 && q.Offset+len(page.Events) < page.Total
	} else if len(page.Events) > q.Limit {
		page.Events, more = page.Events[:q.Limit], true
	}
	if more && q.Limit > 0 {
		page.Next = EncodeCursor(PositionOf(page.Events[len(page.Events)-1]))
	}
}
