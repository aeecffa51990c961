package bunstore

import (
	"context"
	"database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// A page statement's rows are read on the pgx connection under
// database/sql, from the raw column values: through database/sql, each
// value of each row would be converted to a driver.Value, then assigned to
// its destination by reflection, under database/sql's locks, which cost
// more than the statement itself. Only the total (whose type depends on
// the total plan) and columns of unexpected types go through pgx's type map.
//
// The decoding is by hand rather than pgx's own row collection because it
// costs this process far less CPU: BenchmarkPageDecode
// (pgxcollect_internal_test.go; 20,000 worldgen events, pages of 100 and
// 1,000, prepared and literal, PostgreSQL 15, 2 shared cores), geomean
// over the four shapes, two runs (load average 9-12, n=5; 4-5, n=6):
// pgx.CollectRows with RowToStructByPos takes +80% and +63% CPU per page,
// 2x the bytes and 7-10x the allocations (a string and a pointer per
// nullable column, against one string per row here); pgx.ForEachRow into
// typed values, +43% and +24% CPU, 6-9x the allocations. Wall time per
// page, mostly the database's: +27% and +25% with CollectRows, +10% and
// -5% (not significant) with ForEachRow. Measure again with:
//
//	go test ./adapters/bunstore -run '^$' -bench BenchmarkPageDecode -count 6 > pages.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /reader pages.txt

// pageColumnCount is the number of columns of a page statement's row: the
// total, then eventColumns.
var pageColumnCount = 1 + len(eventColumns)

// queryPage runs a page statement (pageStatement) and returns its page of
// at most limit events. args are passed to pgx as they are: a leading
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
func (s *Store) queryPage(ctx context.Context, query string, args []any, limit int) (flagadmin.EventPage, error) {
	page := flagadmin.EventPage{Events: make([]flagadmin.Event, 0, min(max(limit, 0), pageCapacity))}
	conn, err := s.rdb.DB.Conn(ctx)
	if err != nil {
		return page, err
	}
	defer conn.Close()
	err = onPgx(conn, func(pc *pgx.Conn) error {
		if pc.IsClosed() {
			return driver.ErrBadConn
		}
		rows, err := pc.Query(ctx, query, args...)
		if err != nil {
			if pgconn.SafeToRetry(err) {
				return errors.Join(driver.ErrBadConn, err) // not sent: database/sql discards the connection
			}
			return err
		}
		defer rows.Close()
		r := pageReader{types: pc.TypeMap(), fields: rows.FieldDescriptions(), chunk: min(max(limit, 1), pageCapacity)}
		if len(r.fields) != pageColumnCount {
			// A statement that failed before its row description (such as
			// one whose context ended) reports no columns: its error says why.
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			return fmt.Errorf("page statement returned %d columns, want %d", len(r.fields), pageColumnCount)
		}
		first := true
		for rows.Next() {
			vals := rows.RawValues()
			if first { // every row has the same total
				total, _, err := r.int64At(vals, 0)
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
	})
	if errors.Is(err, driver.ErrBadConn) && ctx.Err() != nil {
		// pgx reports a statement it did not send because ctx had ended
		// as not sent: the end of ctx is the cause.
		return page, ctx.Err()
	}
	return page, err
}

// pageReader decodes the raw values of a page statement's rows, in the
// format (text or binary) and type of each column.
type pageReader struct {
	types  *pgtype.Map
	fields []pgconn.FieldDescription
	text   []byte // the string columns of a row, concatenated

	// The values of the events' pointer fields, allocated chunk events at
	// a time rather than one by one (see strPtr, int64Ptr).
	chunk int
	strs  []string
	ints  []int64
}

// strPtr returns a pointer to a copy of v.
func (r *pageReader) strPtr(v string) *string {
	if len(r.strs) == cap(r.strs) {
		r.strs = make([]string, 0, 5*r.chunk) // environment, project, feature_name, group_type, group_id
	}
	r.strs = append(r.strs, v)
	return &r.strs[len(r.strs)-1]
}

// int64Ptr returns a pointer to a copy of n.
func (r *pageReader) int64Ptr(n int64) *int64 {
	if len(r.ints) == cap(r.ints) {
		r.ints = make([]int64, 0, r.chunk) // created_by_user_id
	}
	r.ints = append(r.ints, n)
	return &r.ints[len(r.ints)-1]
}

// Columns of a page statement's row (see pageColumnCount).
const (
	colTotal = iota
	colID
	colCreatedAt
	colType
	colCreatedBy
	colCreatedByUserID
	colEnvironment
	colProject
	colFeatureName
	colData
	colPreData
	colTags
	colGroupType
	colGroupID
)

// event returns the event of a row; ok is false when its columns are null
// (the row of an empty page). Its strings share one allocation, and its
// data and pre-data another.
func (r *pageReader) event(vals [][]byte) (e flagadmin.Event, ok bool, err error) {
	id, ok, err := r.int64At(vals, colID)
	if err != nil || !ok {
		return e, false, err
	}
	createdAt, _, err := r.int64At(vals, colCreatedAt)
	if err != nil {
		return e, false, err
	}
	// The string columns, in one string: type, created_by, environment,
	// project, feature_name, tags, group_type, group_id.
	strCols := [...]int{colType, colCreatedBy, colEnvironment, colProject, colFeatureName, colTags, colGroupType, colGroupID}
	var ends [len(strCols)]int
	var null [len(strCols)]bool
	r.text = r.text[:0]
	for i, c := range strCols {
		if vals[c] == nil {
			null[i] = true
		} else if r.text, err = r.appendText(r.text, vals, c); err != nil {
			return e, false, err
		}
		ends[i] = len(r.text)
	}
	text := string(r.text)
	part := func(i int) (string, bool) {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		return text[start:ends[i]], !null[i]
	}
	e.ID, e.CreatedAt = id, timeOf(createdAt)
	e.Type, _ = part(0)
	e.CreatedBy, _ = part(1)
	if v, ok := part(2); ok {
		e.Environment = r.strPtr(v)
	}
	if v, ok := part(3); ok {
		e.Project = r.strPtr(v)
	}
	if v, ok := part(4); ok {
		e.FeatureName = r.strPtr(v)
	}
	if v, ok := part(5); ok {
		if e.Tags, err = tagsOf(&v); err != nil {
			return e, false, err
		}
	}
	if e.CreatedByUserID, err = r.int64PtrAt(vals, colCreatedByUserID); err != nil {
		return e, false, err
	}
	if v, ok := part(6); ok {
		e.GroupType = r.strPtr(v)
	}
	if v, ok := part(7); ok {
		e.GroupID = r.strPtr(v)
	}
	e.Data, e.PreData, err = r.jsonPair(vals, colData, colPreData)
	return e, true, err
}

// jsonPair returns the JSON texts of columns a and b (nil when null), in
// one allocation.
func (r *pageReader) jsonPair(vals [][]byte, a, b int) (json.RawMessage, json.RawMessage, error) {
	if vals[a] == nil && vals[b] == nil {
		return nil, nil, nil
	}
	buf := r.text[:0]
	var err error
	if buf, err = r.appendText(buf, vals, a); err != nil {
		return nil, nil, err
	}
	mid := len(buf)
	if buf, err = r.appendText(buf, vals, b); err != nil {
		return nil, nil, err
	}
	r.text = buf
	both := make([]byte, len(buf))
	copy(both, buf)
	var x, y json.RawMessage
	if vals[a] != nil {
		x = both[:mid:mid]
	}
	if vals[b] != nil {
		y = both[mid:]
	}
	return x, y, nil
}

// appendText appends the text of column i (nothing when null) to b.
func (r *pageReader) appendText(b []byte, vals [][]byte, i int) ([]byte, error) {
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
func (r *pageReader) int64PtrAt(vals [][]byte, i int) (*int64, error) {
	n, ok, err := r.int64At(vals, i)
	if err != nil || !ok {
		return nil, err
	}
	return r.int64Ptr(n), nil
}

// int64At returns the integer of column i; ok is false when it is null.
func (r *pageReader) int64At(vals [][]byte, i int) (n int64, ok bool, err error) {
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
func (r *pageReader) scanInt64(f *pgconn.FieldDescription, v []byte) (int64, error) {
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

// rawConn is a database/sql connection: *sql.Conn, bun.Conn.
type rawConn interface {
	Raw(func(driverConn any) error) error
}

// onPgx runs fn on the pgx connection under conn, a connection of the pgx
// driver.
func onPgx(conn rawConn, fn func(*pgx.Conn) error) error {
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("postgres driver connection %T is not pgx's", dc)
		}
		return fn(sc.Conn())
	})
}
