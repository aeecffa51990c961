package flagadmin_test

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestCursorRoundTrip(t *testing.T) {
	for _, p := range []flagadmin.EventPosition{
		{CreatedAt: time.Date(2025, 3, 1, 10, 0, 0, 123e6, time.UTC), ID: 1},
		{CreatedAt: time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC), ID: 1 << 62},
		{CreatedAt: time.UnixMilli(0).UTC(), ID: 42},
	} {
		c := flagadmin.EncodeCursor(p)
		if strings.ContainsAny(c, "+/=") {
			t.Errorf("cursor %q is not URL-safe base64 without padding", c)
		}
		got, err := flagadmin.ParseCursor("after", c)
		if err != nil {
			t.Fatalf("ParseCursor(%q): got error %v, want nil", c, err)
		}
		if !got.CreatedAt.Equal(p.CreatedAt) || got.ID != p.ID {
			t.Errorf("got %+v, want %+v", got, p)
		}
	}
}

// foreignCursor returns a cursor of the layout EncodeCursor writes, with
// any version byte and a valid checksum.
func foreignCursor(version byte, ms, id int64) string {
	b := []byte{version}
	b = binary.BigEndian.AppendUint64(b, uint64(ms))
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestParseCursorRefuses(t *testing.T) {
	good := flagadmin.EncodeCursor(flagadmin.EventPosition{CreatedAt: time.UnixMilli(1740823200123), ID: 7})
	if foreignCursor(1, 1740823200123, 7) != good {
		t.Fatal("foreignCursor does not build cursors as EncodeCursor does")
	}
	rows := map[string]string{
		"empty":                 "",
		"not base64url":         strings.Repeat("*", len(good)),
		"standard base64":       base64.StdEncoding.EncodeToString([]byte("0123456789abcdefghijk")),
		"padded":                good + "==",
		"one byte short":        good[:len(good)-2],
		"one character more":    good + "A",
		"another version":       foreignCursor(2, 1740823200123, 7),
		"version 0":             foreignCursor(0, 1740823200123, 7),
		"id 0":                  foreignCursor(1, 1740823200123, 0),
		"a negative id":         foreignCursor(1, 1740823200123, -3),
		"a wrong checksum":      good[:5] + string("AB"[boolIndex(good[5] == 'A')]) + good[6:],
		"an offset token":       "50",
		"a cursor of other API": "eyJpZCI6MTIzfQ",
	}
	for name, raw := range rows {
		_, err := flagadmin.ParseCursor("after", raw)
		var ve *flagadmin.ValidationError
		if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Path != "after" {
			t.Errorf("%s (%q): got error %v, want a *ValidationError on after", name, raw, err)
		}
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestEventPositionFollows(t *testing.T) {
	at := time.Date(2025, 3, 1, 10, 0, 0, 123e6, time.UTC)
	p := flagadmin.EventPosition{CreatedAt: at, ID: 10}
	rows := []struct {
		e    flagadmin.Event
		want bool
	}{
		{flagadmin.Event{CreatedAt: at, ID: 9}, true},
		{flagadmin.Event{CreatedAt: at, ID: 10}, false},
		{flagadmin.Event{CreatedAt: at, ID: 11}, false},
		{flagadmin.Event{CreatedAt: at.Add(-time.Millisecond), ID: 99}, true},
		{flagadmin.Event{CreatedAt: at.Add(time.Millisecond), ID: 1}, false},
	}
	for _, r := range rows {
		if got := p.Follows(r.e); got != r.want {
			t.Errorf("Follows(%v #%d): got %v, want %v", r.e.CreatedAt, r.e.ID, got, r.want)
		}
		// Follows agrees with CompareEvents.
		if got := flagadmin.CompareEvents(flagadmin.Event{CreatedAt: at, ID: 10}, r.e) < 0; got != r.want {
			t.Errorf("CompareEvents disagrees with Follows for %v #%d", r.e.CreatedAt, r.e.ID)
		}
	}
}

func TestParseEventSearchAfter(t *testing.T) {
	c := flagadmin.EncodeCursor(flagadmin.EventPosition{CreatedAt: time.UnixMilli(1740823200123), ID: 7})
	q, err := flagadmin.ParseEventSearch(flagadmin.EventSearchParams{After: c, Limit: "10"})
	if err != nil || q.After == nil || q.After.ID != 7 || q.After.CreatedAt.UnixMilli() != 1740823200123 {
		t.Fatalf("got %+v, %v; want the cursor's position", q.After, err)
	}
	for _, offset := range []string{"1", "50"} {
		_, err := flagadmin.ParseEventSearch(flagadmin.EventSearchParams{After: c, Offset: offset})
		var ve *flagadmin.ValidationError
		if !errors.As(err, &ve) || ve.Fields[0].Path != "after" {
			t.Errorf("after with offset %s: got %v, want a 400 on after", offset, err)
		}
	}
}
