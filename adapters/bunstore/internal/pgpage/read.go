package pgpage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/driverconn"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// A page statement's rows are read on the pgx connection under
// database/sql, from the raw column values: through database/sql, each
// value of each row would be converted to a driver.Value, then assigned to
// its destination by reflection, under database/sql's locks, which cost
// more than the statement itself. Only the total (whose type depends on
// the total's expression) and columns of unexpected types go through
// pgx's type map.
//
// The decoding is by hand rather than pgx's own row collection because it
// costs this process far less CPU: BenchmarkPageDecode
// (adapters/bunstore/pgxcollect_internal_test.go; 20,000 worldgen events,
// pages of 100 and 1,000, prepared and literal, PostgreSQL 15, 2 shared
// cores), geomean over the four shapes, two runs (load average 9-12, n=5;
// 4-5, n=6): pgx.CollectRows with RowToStructByPos takes +80% and +63% CPU
// per page, 2x the bytes and 7-10x the allocations (a string and a pointer
// per nullable column, against one string per row here); pgx.ForEachRow
// into typed values, +43% and +24% CPU, 6-9x the allocations. Wall time
// per page, mostly the database's: +27% and +25% with CollectRows, +10%
// and -5% (not significant) with ForEachRow. Measure again with:
//
//	go test ./adapters/bunstore -run '^$' -bench BenchmarkPageDecode -count 6 > pages.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /reader pages.txt

// Columns is the number of columns of a page statement's row: the total,
// then stored.EventColumns.
var Columns = 1 + len(stored.EventColumns)

// Capacity bounds the events a page's slice is allocated for up front.
const Capacity = 1000

// Read runs a page statement (Statement, or any statement whose columns
// are the total and stored.EventColumns, in order) on a connection of db,
// a pool of the pgx driver, and returns its page of at most limit events.
// args are passed to pgx as they are: a leading
// pgx.QueryExecModeCacheStatement prepares the statement; without one, the
// connection's default, the simple protocol, runs a literal statement.
//
// A statement is tried once. database/sql discards a connection that is
// closed, or unanswering after a second idle, before handing it out
// (pgx's ResetSession), and retries on another. A statement sent on a
// connection the server dropped fails, as it does through database/sql's
// own QueryContext, which cannot retry it either (it may have run): once
// per dropped connection, which pgx then closes and database/sql discards
// (TestPageReadsAfterConnectionsDropped). Only a statement pgx did not
// send at all would database/sql's QueryContext retry; here it returns
// driver.ErrBadConn from Raw, which discards the connection, and fails.
// A retry loop for that case never ran under terminated backends or a cut
// network, so there is none.
func Read(ctx context.Context, db *sql.DB, query string, args []any, limit int) (flagadmin.EventPage, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return flagadmin.EventPage{}, err
	}
	defer conn.Close()
	return ReadOn(ctx, conn, query, args, limit)
}

// ReadOn is Read on conn, a connection of the pgx driver, in the
// transaction it may be in (the transaction's statements and this one
// then see one snapshot).
func ReadOn(ctx context.Context, conn Conn, query string, args []any, limit int) (flagadmin.EventPage, error) {
	page := flagadmin.EventPage{Events: make([]flagadmin.Event, 0, min(max(limit, 0), Capacity))}
	err := OnPgx(conn, func(pc *pgx.Conn) error {
		rows, err := queryOn(ctx, pc, query, args)
		if err != nil {
			return err
		}
		defer rows.Close()
		return readRows(rows, pc.TypeMap(), limit, &page)
	})
	return page, cause(ctx, err)
}

// queryOn runs query on pc. A statement pgx did not send, on a closed
// connection or not at all, fails with driver.ErrBadConn, for
// database/sql to discard the connection.
func queryOn(ctx context.Context, pc *pgx.Conn, query string, args []any) (pgx.Rows, error) {
	if pc.IsClosed() {
		return nil, driver.ErrBadConn
	}
	rows, err := pc.Query(ctx, query, args...)
	if err != nil && pgconn.SafeToRetry(err) {
		return nil, errors.Join(driver.ErrBadConn, err) // not sent: database/sql discards the connection
	}
	return rows, err
}

// cause is err of a read on the pgx connection, or the end of ctx when
// that ended it: pgx reports a statement it did not send because ctx had
// ended as not sent (queryOn: driver.ErrBadConn).
func cause(ctx context.Context, err error) error {
	if errors.Is(err, driver.ErrBadConn) && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// readRows reads the rows of a page statement into page.
func readRows(rows pgx.Rows, types *pgtype.Map, limit int, page *flagadmin.EventPage) error {
	r := reader{types: types, fields: rows.FieldDescriptions(), chunk: min(max(limit, 1), Capacity),
		ends: make([]int, max(len(stringColumns), len(jsonColumns))), null: make([]bool, len(stringColumns))}
	if len(r.fields) != Columns {
		// A statement that failed before its row description (such as one
		// whose context ended) reports no columns: its error says why.
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		return fmt.Errorf("page statement returned %d columns, want %d", len(r.fields), Columns)
	}
	first := true
	for rows.Next() {
		vals := rows.RawValues()
		if first { // every row has the same total
			total, _, err := r.int64At(vals, colTotal)
			if err != nil {
				return err
			}
			page.Total = int(total)
			first = false
		}
		e, ok, err := r.event(vals)
		if err != nil {
			return err
		}
		if ok { // else the row of an empty page, with no event
			page.Events = append(page.Events, e)
		}
	}
	return rows.Err()
}

// reader decodes the raw values of a page statement's rows, in the format
// (text or binary) and type of each column.
type reader struct {
	types  *pgtype.Map
	fields []pgconn.FieldDescription
	text   []byte // the string columns of a row, concatenated
	ends   []int  // rowStrings.ends, reused from row to row
	null   []bool // rowStrings.null, reused from row to row
	json   [][]byte

	// The values of the events' pointer fields, allocated chunk events at
	// a time rather than one by one (see strPtr, int64Ptr).
	chunk int
	strs  []string
	ints  []int64
}

// strPtr returns a pointer to a copy of v.
func (r *reader) strPtr(v string) *string {
	if len(r.strs) == cap(r.strs) {
		r.strs = make([]string, 0, len(optionalColumns)*r.chunk)
	}
	r.strs = append(r.strs, v)
	return &r.strs[len(r.strs)-1]
}

// int64Ptr returns a pointer to a copy of n.
func (r *reader) int64Ptr(n int64) *int64 {
	if len(r.ints) == cap(r.ints) {
		r.ints = make([]int64, 0, max(nullIntColumns, 1)*r.chunk)
	}
	r.ints = append(r.ints, n)
	return &r.ints[len(r.ints)-1]
}

// colTotal is the column of a page's total; the columns of the declared
// event fields (flagadmin.EventFields, stored.EventColumns) follow it,
// eventFields[i] in column 1+i.
const colTotal = 0

// eventFields are the declared fields of an event, which event reads.
var eventFields = flagadmin.EventFields()

// colID is the column of the events' id, null in the row of an empty page.
var colID = 1 + slices.IndexFunc(eventFields, func(f flagadmin.EventField) bool { return f.Name == "id" })

// The columns of a row by how event reads them: the string columns (text,
// optional text and tags) into one string, the JSON columns into one
// byte slice; optionalColumns are the string columns held by pointer;
// nullIntColumns counts the integer columns held by pointer.
var stringColumns, jsonColumns, optionalColumns, nullIntColumns = func() (strs, jsons, optional []int, nullInts int) {
	for i, f := range eventFields {
		switch f.Kind {
		case flagadmin.FieldText, flagadmin.FieldTags:
			strs = append(strs, 1+i)
		case flagadmin.FieldTextOrNull, flagadmin.FieldTextOrAbsent:
			strs, optional = append(strs, 1+i), append(optional, 1+i)
		case flagadmin.FieldJSONOrNull:
			jsons = append(jsons, 1+i)
		case flagadmin.FieldIntOrNull:
			nullInts++
		}
	}
	return strs, jsons, optional, nullInts
}()

// rowStrings are the string columns of a row: their values share one
// string, part i running to ends[i]; null[i] marks a null.
type rowStrings struct {
	text string
	ends []int
	null []bool
}

// part returns string column i (an index of stringColumns) and whether it
// is not null.
func (s *rowStrings) part(i int) (string, bool) {
	start := 0
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.text[start:s.ends[i]], !s.null[i]
}

// strings reads the string columns of a row.
func (r *reader) strings(vals [][]byte) (*rowStrings, error) {
	s := rowStrings{ends: r.ends[:len(stringColumns)], null: r.null[:len(stringColumns)]}
	clear(s.null)
	r.text = r.text[:0]
	for i, c := range stringColumns {
		var err error
		if vals[c] == nil {
			s.null[i] = true
		} else if r.text, err = r.appendText(r.text, vals, c); err != nil {
			return nil, err
		}
		s.ends[i] = len(r.text)
	}
	s.text = string(r.text)
	return &s, nil
}

// event returns the event of a row; ok is false when its id is null
// (the row of an empty page). Its strings share one allocation, and its
// JSON fields another.
func (r *reader) event(vals [][]byte) (e flagadmin.Event, ok bool, err error) {
	if vals[colID] == nil {
		return e, false, nil
	}
	s, err := r.strings(vals)
	if err != nil {
		return e, false, err
	}
	si := 0 // the next of stringColumns
	for i := range eventFields {
		f, col := &eventFields[i], 1+i
		switch f.Kind {
		case flagadmin.FieldInt:
			if *f.Int(&e), _, err = r.int64At(vals, col); err != nil {
				return e, false, err
			}
		case flagadmin.FieldTime:
			ms, _, err := r.int64At(vals, col)
			if err != nil {
				return e, false, err
			}
			*f.Time(&e) = stored.Time(ms)
		case flagadmin.FieldIntOrNull:
			if *f.IntOrNull(&e), err = r.int64PtrAt(vals, col); err != nil {
				return e, false, err
			}
		case flagadmin.FieldText:
			*f.Text(&e), _ = s.part(si)
			si++
		case flagadmin.FieldTextOrNull, flagadmin.FieldTextOrAbsent:
			*f.TextOrNull(&e) = r.optional(s.part(si))
			si++
		case flagadmin.FieldTags:
			if v, ok := s.part(si); ok {
				if *f.Tags(&e), err = stored.Tags(&v); err != nil {
					return e, false, err
				}
			}
			si++
		}
	}
	return e, true, r.jsonFields(vals, &e)
}

// optional is a pointer to a copy of v when ok, else nil.
func (r *reader) optional(v string, ok bool) *string {
	if !ok {
		return nil
	}
	return r.strPtr(v)
}

// jsonFields sets the JSON fields of e to the texts of jsonColumns (nil
// when null), in one allocation.
func (r *reader) jsonFields(vals [][]byte, e *flagadmin.Event) error {
	buf := r.text[:0]
	ends := r.ends[:0]
	some := false
	for _, c := range jsonColumns {
		var err error
		if buf, err = r.appendText(buf, vals, c); err != nil {
			return err
		}
		ends = append(ends, len(buf))
		some = some || vals[c] != nil
	}
	r.text, r.ends = buf, ends
	if !some {
		return nil
	}
	all := make([]byte, len(buf))
	copy(all, buf)
	start := 0
	for j, c := range jsonColumns {
		if vals[c] != nil {
			*eventFields[c-1].JSON(e) = all[start:ends[j]:ends[j]]
		}
		start = ends[j]
	}
	return nil
}

// appendText appends the text of column i (nothing when null) to b.
func (r *reader) appendText(b []byte, vals [][]byte, i int) ([]byte, error) {
	v := vals[i]
	if v == nil {
		return b, nil
	}
	switch r.fields[i].DataTypeOID {
	case pgtype.TextOID, pgtype.VarcharOID: // the same in text and binary format
		return append(b, v...), nil
	}
	var s string
	if err := r.types.Scan(r.fields[i].DataTypeOID, r.fields[i].Format, v, &s); err != nil {
		return b, fmt.Errorf("column %s: %w", r.fields[i].Name, err)
	}
	return append(b, s...), nil
}

// int64PtrAt returns the integer of column i, nil when null.
func (r *reader) int64PtrAt(vals [][]byte, i int) (*int64, error) {
	n, ok, err := r.int64At(vals, i)
	if err != nil || !ok {
		return nil, err
	}
	return r.int64Ptr(n), nil
}

// int64At returns the integer of column i; ok is false when it is null.
func (r *reader) int64At(vals [][]byte, i int) (n int64, ok bool, err error) {
	v := vals[i]
	if v == nil {
		return 0, false, nil
	}
	f := &r.fields[i]
	if f.DataTypeOID == pgtype.Int8OID {
		if f.Format == pgx.BinaryFormatCode && len(v) == 8 {
			return int64(binary.BigEndian.Uint64(v)), true, nil
		}
		if n, ok := parseDecimal(v); f.Format == pgx.TextFormatCode && ok {
			return n, true, nil
		}
	}
	n, err = r.scanInt64(f, v)
	return n, err == nil, err
}

// scanInt64 decodes an integer of any type with pgx's type map.
func (r *reader) scanInt64(f *pgconn.FieldDescription, v []byte) (int64, error) {
	var n int64
	if err := r.types.Scan(f.DataTypeOID, f.Format, v, &n); err != nil {
		return 0, fmt.Errorf("column %s: %w", f.Name, err)
	}
	return n, nil
}

// parseDecimal parses an int64 in PostgreSQL's text format of a bigint:
// an optional minus sign and at most 18 digits (longer ones, which could
// overflow, report false, as does anything else).
func parseDecimal(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// Conn is a database/sql connection: *sql.Conn, bun.Conn.
type Conn interface {
	Raw(func(driverConn any) error) error
}

// OnPgx runs fn on the pgx connection under conn, a connection of the pgx
// driver, and under any wrappers bunstore.WithConnector put around it:
// what fn runs does not pass through them, so a wrapper that injects
// faults into statements does not see it.
func OnPgx(conn Conn, fn func(*pgx.Conn) error) error {
	return conn.Raw(func(dc any) error {
		sc, ok := driverconn.As[*stdlib.Conn](dc)
		if !ok {
			return fmt.Errorf("postgres driver connection %T is not pgx's", dc)
		}
		return fn(sc.Conn())
	})
}
