// Package proofread reads what a proof of the verifiable log needs in one
// statement, a speed-up (bunstore.ProofReads) over one statement per step
// (the event, its leaf's index, the log's size, the leaf, the hashes):
// the statement of a vlog.ProofQuery (Statement) and its rows
// (Scan), for PostgreSQL, MySQL/MariaDB and SQLite alike.
//
// The statement is a UNION ALL of short reads of primary keys, each row
// tagged with its kind. The leaf is looked up by event id only when the
// event passes the search's filter (its id and what the caller may see),
// in a common table expression that the windows' parts join, computing
// their ranges from its idx: a window of level L and width W around leaf
// i is the hashes from i / (2^L·W) · W on, integer division. Its kinds and
// levels are written in the text and its positions are values, so the
// text is the same for every proof in a tree of one size, and PostgreSQL
// can keep it prepared.
package proofread

import (
	"database/sql"
	"fmt"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// The kinds of the statement's rows: (kind, level, idx, hash).
const (
	rowLeaf    = 0 // the event's leaf: its idx and hash
	rowSize    = 1 // the log's size, as idx
	rowVisible = 2 // the event, visible: its id, as idx, and its salt, as hash
	rowHash    = 3 // a stored hash: its level, idx and hash
)

// Statement is the one statement of q. filter is the search's condition
// on events of q.Event (its id and the caller's visibility); div is the
// database's operator of integer division (/, or MySQL's DIV).
func Statement(q vlog.ProofQuery, filter sqlq.Fragment, div string) sqlq.Fragment {
	var with, visible sqlq.Fragment
	var parts []sqlq.Fragment
	hashes := func(level int) string {
		return fmt.Sprintf("SELECT %d AS k, %d AS lvl, h.idx, h.hash FROM ", rowHash, level)
	}
	// The leaf comes first when asked for, then the hashes: PostgreSQL
	// types a UNION's column by its parts from the left, so the NULL
	// hash of the size comes after a part of bytea hashes. The event's
	// row carries its salt in the hash column.
	if q.Event != nil && len(q.Event.IDs) == 1 {
		with = sqlq.Fill("WITH leaf AS (SELECT idx, hash FROM log_leaves WHERE ? AND EXISTS (SELECT 1 FROM events WHERE ?))",
			sqlq.F("event_id = ?", q.Event.IDs[0]), filter)
		visible = filter.Wrap(fmt.Sprintf("SELECT %d AS k, 0 AS lvl, id AS idx, salt AS hash FROM events WHERE ", rowVisible), "")
		parts = append(parts, sqlq.F(fmt.Sprintf("SELECT %d AS k, 0 AS lvl, idx, hash FROM leaf", rowLeaf)))
		for _, w := range q.Windows {
			if w.Width < 1 || w.End < 1 {
				continue
			}
			start := "leaf.idx " + div + " ? * ?"
			span := (int64(1) << w.Level) * w.Width
			on := "h.idx >= " + start + " AND h.idx < " + start + " + ? AND h.idx < ?"
			args := []any{span, w.Width, span, w.Width, w.Width, w.End}
			if w.Level == 0 {
				parts = append(parts, sqlq.F(hashes(0)+"leaf JOIN log_leaves h ON "+on, args...))
			} else {
				parts = append(parts, sqlq.F(hashes(w.Level)+fmt.Sprintf("leaf JOIN log_hashes h ON h.level = %d AND ", w.Level)+on, args...))
			}
		}
	}
	for _, r := range q.Ranges {
		start := max(r.Start, 0)
		if start >= r.End {
			continue
		}
		if r.Level == 0 {
			parts = append(parts, sqlq.F(hashes(0)+"log_leaves h WHERE h.idx >= ? AND h.idx < ?", start, r.End))
		} else {
			parts = append(parts, sqlq.F(hashes(r.Level)+fmt.Sprintf("log_hashes h WHERE h.level = %d AND h.idx >= ? AND h.idx < ?", r.Level), start, r.End))
		}
	}
	parts = append(parts, visible, sqlq.F(fmt.Sprintf("SELECT %d AS k, 0 AS lvl, COALESCE(MAX(idx) + 1, 0) AS idx, NULL AS hash FROM log_leaves", rowSize)))
	return sqlq.Join(" ", with, sqlq.Join(" UNION ALL ", parts...))
}

// Scan reads the rows of q's statement, and closes them.
func Scan(rows *sql.Rows, q vlog.ProofQuery) (vlog.ProofRows, error) {
	defer rows.Close()
	var out vlog.ProofRows
	var salt []byte
	for rows.Next() {
		var (
			kind, level int
			idx         int64
			hash        []byte
		)
		if err := rows.Scan(&kind, &level, &idx, &hash); err != nil {
			return vlog.ProofRows{}, err
		}
		switch kind {
		case rowSize:
			out.Size = idx
		case rowVisible:
			out.Visible, salt = true, hash
		case rowLeaf, rowHash:
			if len(hash) != 32 {
				return vlog.ProofRows{}, fmt.Errorf("a stored hash of %d bytes, want 32 (level %d, index %d)", len(hash), level, idx)
			}
			if kind == rowLeaf {
				// A visible event is not pruned: pruning removes the event.
				out.Leaf = &vlog.Leaf{Index: idx, EventID: q.Event.IDs[0], Hash: [32]byte(hash)}
			} else {
				out.Hashes = append(out.Hashes, vlog.Hash{Level: level, Index: idx, Hash: [32]byte(hash)})
			}
		}
	}
	if out.Leaf != nil {
		out.Leaf.Salt = salt
	}
	return out, rows.Err()
}
