package pgpage

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/summary"
)

// The project list's rows are read from pgx's raw values for the reason a
// page's are: through database/sql, each of a list's 3,000-odd values
// (200 projects, 240 owners) became a driver.Value, then was assigned by
// reflection, and the garbage of it was collected; with the result cache
// off, that was a third of the server's CPU per list on PostgreSQL.

// The columns of the list's statement (summary.ProjectRow, in order) and
// of the owners' (summary.OwnerRow).
const (
	projectColumns = 14
	ownerColumns   = 7
)

// ProjectRows reads the rows of the project list's two statements on
// conn, a connection of the pgx driver, in the transaction it is in (both
// then see one snapshot), into to: those of list (summary.ProjectRow's
// columns), kept prepared with its values hidden from the planner, which
// then plans it once for all (sqlq.Fragment.Opaque), then, when it has
// any, those of owners (summary.OwnerRow's), kept prepared.
func ProjectRows(ctx context.Context, conn Conn, list, owners sqlq.Fragment, to summary.ProjectRows) error {
	err := OnPgx(conn, func(pc *pgx.Conn) error {
		text, args := prepared(list)
		listed := false
		err := eachRow(ctx, pc, text, args, projectColumns, func(r *reader, vals [][]byte) error {
			p, err := r.project(vals)
			if err != nil {
				return err
			}
			listed = true
			return to.Project(p)
		})
		if err != nil || !listed {
			return err
		}
		text, args = cached(owners.Dollar())
		return eachRow(ctx, pc, text, args, ownerColumns, func(r *reader, vals [][]byte) error {
			o, err := r.owner(vals)
			if err != nil {
				return err
			}
			return to.Owner(o)
		})
	})
	return cause(ctx, err)
}

// eachRow runs query on pc and hands each of its rows, of columns
// columns, to fn with a reader of their raw values.
func eachRow(ctx context.Context, pc *pgx.Conn, query string, args []any, columns int, fn func(r *reader, vals [][]byte) error) error {
	rows, err := queryOn(ctx, pc, query, args)
	if err != nil {
		return err
	}
	defer rows.Close()
	r := reader{types: pc.TypeMap(), fields: rows.FieldDescriptions()}
	if len(r.fields) != columns {
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		return fmt.Errorf("statement returned %d columns, want %d", len(r.fields), columns)
	}
	for rows.Next() {
		if err := fn(&r, rows.RawValues()); err != nil {
			return err
		}
	}
	return rows.Err()
}

// project decodes a row of the list's statement. Its four texts share one
// string.
func (r *reader) project(vals [][]byte) (summary.ProjectRow, error) {
	var p summary.ProjectRow
	if err := r.texts(vals, projectTexts, []*string{&p.ID, &p.Name, &p.Description, &p.Mode}); err != nil {
		return p, err
	}
	var err error
	if p.CreatedAt, _, err = r.int64At(vals, 4); err != nil {
		return p, err
	}
	for i, dst := range []*sql.NullInt64{&p.ArchivedAt, &p.LastEvent, &p.Counts[0], &p.Counts[1], &p.Counts[2], &p.Counts[3], &p.LastSeen, &p.Counts[4]} {
		if dst.Int64, dst.Valid, err = r.int64At(vals, 5+i); err != nil {
			return p, err
		}
	}
	p.Favorite, _, err = r.int64At(vals, 13)
	return p, err
}

// The text columns of the list's statement and of the owners'.
var projectTexts, ownerTexts = []int{0, 1, 2, 3}, []int{0, 2, 3, 4, 6}

// owner decodes a row of the owners' statement: the project, the user's
// id, name, username and email, the group's id and name. Its texts share
// one string.
func (r *reader) owner(vals [][]byte) (summary.OwnerRow, error) {
	var o summary.OwnerRow
	err := r.texts(vals, ownerTexts, []*string{&o.Project, &o.Name, &o.Username, &o.Email, &o.GroupName})
	if err != nil {
		return o, err
	}
	if o.User.Int64, o.User.Valid, err = r.int64At(vals, 1); err != nil {
		return o, err
	}
	o.Group.Int64, o.Group.Valid, err = r.int64At(vals, 5)
	return o, err
}

// texts sets each of dst to the text of the column of cols at its place
// ("" when null): at most 8 columns, which share one string.
func (r *reader) texts(vals [][]byte, cols []int, dst []*string) error {
	var ends [8]int
	r.text = r.text[:0]
	for i, c := range cols {
		var err error
		if r.text, err = r.appendText(r.text, vals, c); err != nil {
			return err
		}
		ends[i] = len(r.text)
	}
	all, start := string(r.text), 0
	for i := range cols {
		*dst[i], start = all[start:ends[i]], ends[i]
	}
	return nil
}
