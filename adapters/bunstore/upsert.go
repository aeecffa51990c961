package bunstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun/dialect"
)

// merge says how an upsert combines a row's stored value with the one
// written again for the same key.
type merge int

const (
	// mergeSum stores the sum of both.
	mergeSum merge = iota
	// mergeMax stores the larger; where the database can (not MySQL), a row
	// whose stored value is not smaller is left unwritten.
	mergeMax
)

// upsert is the multi-row INSERT of rows of three values (two key columns,
// one value) that, for a key already stored, merges the value instead:
// event_counts and project_last_events.
type upsert struct {
	table   string
	columns [3]string
	merge   merge
	// chunk bounds the rows of one statement.
	chunk int
}

// sql is the statement writing rows rows, with ? or $n placeholders.
func (u upsert) sql(name dialect.Name, rows int, dollar bool) string {
	var b strings.Builder
	key, col := u.columns[0]+", "+u.columns[1], u.columns[2]
	fmt.Fprintf(&b, "INSERT INTO %s (%s, %s) VALUES ", u.table, key, col)
	writeTriples(&b, rows, dollar)
	if name == dialect.MySQL {
		added := "VALUES(" + col + ")"
		if u.merge == mergeSum {
			fmt.Fprintf(&b, " ON DUPLICATE KEY UPDATE %s = %s + %s", col, col, added)
		} else {
			fmt.Fprintf(&b, " ON DUPLICATE KEY UPDATE %s = GREATEST(%s, %s)", col, col, added)
		}
		return b.String()
	}
	stored, added := col, "excluded."+col
	if name == dialect.PG {
		stored, added = u.table+"."+col, "EXCLUDED."+col
	}
	fmt.Fprintf(&b, " ON CONFLICT (%s) DO UPDATE SET %s = ", key, col)
	if u.merge == mergeSum {
		fmt.Fprintf(&b, "%s + %s", stored, added)
	} else {
		fmt.Fprintf(&b, "%s WHERE %s < %s", added, stored, added)
	}
	return b.String()
}

// write upserts rows, chunk by chunk, through exec.
func (u upsert) write(ctx context.Context, name dialect.Name, dollar bool, rows [][3]any, exec func(ctx context.Context, query string, args ...any) error) error {
	for start := 0; start < len(rows); start += u.chunk {
		part := rows[start:min(len(rows), start+u.chunk)]
		args := make([]any, 0, 3*len(part))
		for _, r := range part {
			args = append(args, r[:]...)
		}
		if err := exec(ctx, u.sql(name, len(part), dollar), args...); err != nil {
			return err
		}
	}
	return nil
}

// writeTriples writes the placeholders of rows rows of three values each,
// comma-separated: (?, ?, ?), ... or ($1, $2, $3), ($4, $5, $6), ...
func writeTriples(b *strings.Builder, rows int, dollar bool) {
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		if dollar {
			fmt.Fprintf(b, "($%d, $%d, $%d)", 3*i+1, 3*i+2, 3*i+3)
		} else {
			b.WriteString("(?, ?, ?)")
		}
	}
}
