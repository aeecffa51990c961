package storecache

import (
	"encoding/binary"
	"slices"
	"time"
	"unsafe"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Keys of the result cache. Each kind starts with its own byte, then
// encodes every input of the result, each field self-delimiting (lengths
// before contents), so that two keys are equal only when the inputs are.
// The kinds: 'e' SearchEvents, 'p' ProjectStats, 'a' ProjectAccess.

// appendEventQueryKey appends the key of the event search q: its column
// filters as the domain declares them (EventQuery.ColumnFilters), then its
// other fields. Every field of EventQuery must be part of it (a test checks).
func appendEventQueryKey(b []byte, q *flagadmin.EventQuery) []byte {
	b = append(b, 'e')
	for c := range q.ColumnFilters() { // every one, in a fixed order
		b = appendStringsKey(b, c.Strings)
		b = appendIntsKey(b, c.Ints)
	}
	b = appendTimeKey(b, q.From)
	b = appendTimeKey(b, q.Before)
	b = appendStringKey(b, q.Text)
	b = binary.AppendVarint(b, int64(q.TextScope))
	b = appendBoolKey(b, q.RequireProject)
	b = appendStringsKey(b, q.HiddenProjects)
	b = binary.AppendVarint(b, int64(q.Limit))
	b = binary.AppendVarint(b, int64(q.Offset))
	if q.After == nil {
		return append(b, 0)
	}
	b = binary.AppendVarint(append(b, 1), q.After.CreatedAt.UnixMilli())
	return binary.AppendVarint(b, q.After.ID)
}

// appendStatsKey appends the key of the project statistics q selects:
// Archived, FavoritesOf and the feature types of the cut-offs, not their
// times (a cached result says which times it holds for, see
// projectStats.holdsFor).
func appendStatsKey(b []byte, q *flagadmin.ProjectStatsQuery) []byte {
	b = append(b, 'p')
	b = appendBoolKey(b, q.Archived)
	if q.FavoritesOf != nil {
		b = binary.AppendVarint(append(b, 1), *q.FavoritesOf)
	} else {
		b = append(b, 0)
	}
	types := make([]string, 0, 8)
	for t := range q.PotentiallyStaleBefore {
		types = append(types, string(t))
	}
	slices.Sort(types)
	return appendStringsKey(b, types)
}

// appendAccessKey appends the key of the project access of userID.
func appendAccessKey(b []byte, userID int64) []byte {
	return binary.AppendVarint(append(b, 'a'), userID)
}

func appendStringKey(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendStringsKey(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendStringKey(b, s)
	}
	return b
}

func appendIntsKey(b []byte, ns []int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(ns)))
	for _, n := range ns {
		b = binary.AppendVarint(b, n)
	}
	return b
}

func appendTimeKey(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, 0)
	}
	b = binary.AppendVarint(append(b, 1), t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func appendBoolKey(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// Sizes: estimates of the bytes a cached value holds, from the sizes of
// its structs and the lengths of what they point to. (Pages of events,
// the most of the cache, are counted exactly instead: see compactPage.)

func stringPtrSize(s *string) int {
	if s == nil {
		return 0
	}
	return int(unsafe.Sizeof(*s)) + len(*s)
}

// timePtrSize is what a non-nil *time.Time points to.
const timePtrSize = int(unsafe.Sizeof(time.Time{}))

// statsSize estimates the bytes stats holds.
func statsSize(stats []flagadmin.ProjectStats) int64 {
	n := cap(stats) * int(unsafe.Sizeof(flagadmin.ProjectStats{}))
	for i := range stats {
		st := &stats[i]
		p := &st.Project
		n += len(p.ID) + len(p.Name) + len(p.Description) + len(p.Mode)
		for _, t := range []*time.Time{p.ArchivedAt, st.LastUpdatedAt, st.LastReportedFlagUsage} {
			if t != nil {
				n += timePtrSize
			}
		}
		n += cap(st.Owners) * int(unsafe.Sizeof(flagadmin.ProjectOwner{}))
		for _, o := range st.Owners {
			n += len(o.OwnerType) + len(o.Name) + stringPtrSize(o.Email) + stringPtrSize(o.ImageURL)
		}
	}
	return int64(n)
}

// accessSize estimates the bytes of a project access: those of its roles
// and of its private projects' ids.
func accessSize(a flagadmin.ProjectAccess) int64 {
	return rolesSize(a.Roles) + stringsSize(a.Private)
}

// rolesSize estimates the bytes of a map of project roles: per entry the
// key and value headers, their bytes and the map's own overhead.
func rolesSize(roles map[string]flagadmin.ProjectRole) int64 {
	n := 48 + len(roles)*int(2*unsafe.Sizeof("")+16)
	for id, r := range roles {
		n += len(id) + len(r)
	}
	return int64(n)
}

// stringsSize estimates the bytes ids holds.
func stringsSize(ids []string) int64 {
	n := cap(ids) * int(unsafe.Sizeof(""))
	for _, id := range ids {
		n += len(id)
	}
	return int64(n)
}
