package stored

import "iter"

// MaxInsertBytes bounds the text of the events one multi-row INSERT
// carries, as well as the dialect's row count: a statement of a few
// megabytes whatever the events' size (the SQL text is formatted in
// memory, and MySQL refuses a statement above max_allowed_packet, 16 MiB
// by default on MariaDB).
const MaxInsertBytes = 4 << 20

// rowOverhead is what Size counts for a row beyond its texts: its other
// columns and the statement's punctuation.
const rowOverhead = 128

// Size is about the bytes the row takes in an INSERT statement's text.
func (r *Event) Size() int {
	n := rowOverhead + len(r.Type) + len(r.CreatedBy) + len(r.SearchPayload) + len(r.SearchMeta) + 2*len(r.Salt)
	for _, s := range []*string{r.Environment, r.Project, r.FeatureName, r.Data, r.PreData, r.Tags, r.GroupType, r.GroupID} {
		if s != nil {
			n += len(*s)
		}
	}
	return n
}

// Chunks yields rows in runs for multi-row INSERTs, each with the index of
// its first row: at most maxRows rows each, and no more than fit in
// MaxInsertBytes (Size) but for a run of one row.
func Chunks(rows []Event, maxRows int) iter.Seq2[int, []Event] {
	return func(yield func(int, []Event) bool) {
		for start := 0; start < len(rows); {
			end, size := start, 0
			for end < len(rows) && end-start < maxRows {
				size += rows[end].Size()
				if size > MaxInsertBytes && end > start {
					break
				}
				end++
			}
			if !yield(start, rows[start:end]) {
				return
			}
			start = end
		}
	}
}
