package pgpage

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

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

// ProjectRows reads the rows of the project list's two statements into
// to, in a read-only transaction of their own (both then see one
// snapshot) on a connection of db, a pool of the pgx driver: those of list
// (summary.ProjectRow's columns), kept prepared with its values hidden
// from the planner, which then plans it once for all
// (sqlq.Fragment.Opaque), then, when it has any, those of owners
// (summary.OwnerRow's), kept prepared. The transaction's BEGIN, the two
// statements and its COMMIT are sent together and answered together: one
// round trip where each took its own (1.07-1.31x the lists a second end to
// end, 200 projects, 16 connections: BENCHMARKS.md, "Where nothing is
// cached").
//
// A statement that fails leaves the transaction open, aborted (the server
// skips the rest of the batch): database/sql then discards the
// connection rather than hand it out again (pgx's ResetSession reports a
// connection inside a transaction bad).
func ProjectRows(ctx context.Context, db *sql.DB, list, owners sqlq.Fragment, to summary.ProjectRows) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	err = OnPgx(conn, func(pc *pgx.Conn) error {
		b := &pgconn.Batch{}
		b.ExecParams(beginReadOnly, nil, nil, nil, nil)
		listText, listArgs := list.Opaque()
		if err := queueStatement(ctx, pc, b, listText, listArgs); err != nil {
			return err
		}
		ownersText, ownersArgs := owners.Dollar()
		if err := queueStatement(ctx, pc, b, ownersText, ownersArgs); err != nil {
			return err
		}
		b.ExecParams("COMMIT", nil, nil, nil, nil)
		results := pc.PgConn().ExecBatch(ctx, b)
		err := readProjectBatch(results, pc.TypeMap(), to)
		if cerr := results.Close(); err == nil {
			err = cerr
		}
		return err
	})
	return cause(ctx, err)
}

// beginReadOnly begins the transaction of the project list's batch: that
// of the store's reads (its dialect's ReadTxOptions).
const beginReadOnly = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

// queueStatement adds the statement text, prepared on pc (once: pgx keeps
// it by its text), to b with args, its values written in text format, and
// its columns asked for in the formats pgx prefers for their types.
func queueStatement(ctx context.Context, pc *pgx.Conn, b *pgconn.Batch, text string, args []any) error {
	sd, err := pc.Prepare(ctx, text, text)
	if err != nil {
		return err
	}
	if len(sd.ParamOIDs) != len(args) {
		return fmt.Errorf("statement has %d parameters, given %d values", len(sd.ParamOIDs), len(args))
	}
	types := pc.TypeMap()
	values := make([][]byte, len(args))
	for i, arg := range args {
		if values[i], err = types.Encode(sd.ParamOIDs[i], pgtype.TextFormatCode, arg, nil); err != nil {
			return fmt.Errorf("parameter $%d: %w", i+1, err)
		}
	}
	formats := make([]int16, len(sd.Fields))
	for i, f := range sd.Fields {
		formats[i] = types.FormatCodeForOID(f.DataTypeOID)
	}
	b.ExecStatement(sd, values, nil, formats)
	return nil
}

// readProjectBatch hands to to the rows of the project list's batch: its
// second result, the list's, then, when that has any, its third, the
// owners'. It reads no further than an error.
func readProjectBatch(results *pgconn.MultiResultReader, types *pgtype.Map, to summary.ProjectRows) error {
	listed := false
	for i := 0; results.NextResult(); i++ {
		rr := results.ResultReader()
		var err error
		switch {
		case i == 1:
			err = eachRow(rr, types, projectColumns, func(r *reader, vals [][]byte) error {
				p, err := r.project(vals)
				if err != nil {
					return err
				}
				listed = true
				return to.Project(p)
			})
		case i == 2 && listed:
			err = eachRow(rr, types, ownerColumns, func(r *reader, vals [][]byte) error {
				o, err := r.owner(vals)
				if err != nil {
					return err
				}
				return to.Owner(o)
			})
		}
		if _, cerr := rr.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// eachRow hands each row of rr, of columns columns, to fn with a reader
// of their raw values.
func eachRow(rr *pgconn.ResultReader, types *pgtype.Map, columns int, fn func(r *reader, vals [][]byte) error) error {
	r := reader{types: types, fields: rr.FieldDescriptions()}
	if len(r.fields) != columns {
		return fmt.Errorf("statement returned %d columns, want %d", len(r.fields), columns)
	}
	for rr.NextRow() {
		if err := fn(&r, rr.Values()); err != nil {
			return err
		}
	}
	return nil
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
