package bunstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/pgpage"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// TestPgxPagesAgreeWithDatabaseSQL reads page statements of literal and
// prepared shapes, full and empty pages, with each total plan (whose total
// is a bigint, an integer or a numeric), through queryPage (pgx's raw
// values, text format for literal statements and binary for prepared ones)
// and through database/sql (queryPageSQL).
// The pages must be the same, down to their JSON.
func TestPgxPagesAgreeWithDatabaseSQL(t *testing.T) {
	ctx := context.Background()
	s, w := postgresPageWorld(t, 7)
	projects := w.Projects()
	p1, p2 := projects[1].ID, projects[2].ID
	user := w.Users()[2].ID
	from := w.Config().Start.AddDate(0, 6, 0)
	before := from.AddDate(0, 2, 0)
	literals, prepareds, events := 0, 0, 0
	for _, offset := range []int{0, 40, 2990, 5000} {
		for _, q := range []flagadmin.EventQuery{
			{},
			{Types: []string{flagadmin.EventFeatureStrategyUpdate}},
			{Projects: []string{p1}},
			{Projects: []string{"no-such-project"}},
			{CreatedByUserIDs: []int64{user}},
			{From: &from, Before: &before},
			{RequireProject: true, HiddenProjects: []string{p1, p2}},
			{Types: []string{flagadmin.EventFeatureArchived, flagadmin.EventFeatureCreated}},
			{Types: []string{flagadmin.EventFeatureStrategyUpdate}, Projects: []string{p1}},
			{Projects: []string{p1, p2}, RequireProject: true, HiddenProjects: []string{p2}},
			{Environments: []string{"production"}, GroupIDs: []string{"01WG0000000000000000000001"}},
		} {
			q.Limit, q.Offset = 50, offset
			if _, seeks := s.pageSearch(q); seeks {
				continue
			}
			modes := []bool{false}
			if pgpage.GenericPlanSafe(q) {
				modes = []bool{false, true} // both: a literal statement is served too
			}
			for _, prepared := range modes {
				query, args := s.pageStatement(q, prepared)
				if !prepared {
					literals++
				} else {
					prepareds++
				}
				want, err := s.queryPageSQL(ctx, query, args, q.Limit)
				if err != nil {
					t.Fatalf("%+v: database/sql: %v", q, err)
				}
				for i := range 7 { // prepared: the 6th execution may use the generic plan
					got, err := s.queryPage(ctx, query, args, q.Limit)
					for _, other := range []func(context.Context, string, []any, int) (flagadmin.EventPage, error){s.queryPageCollect, s.queryPageScan} {
						if err != nil {
							break
						}
						var alt flagadmin.EventPage
						if alt, err = other(ctx, query, args, q.Limit); err == nil && !reflect.DeepEqual(alt, want) {
							t.Fatalf("%+v: pgx's collection: got total %d, %d events, want total %d, %d events", q, alt.Total, len(alt.Events), want.Total, len(want.Events))
						}
					}
					if err != nil {
						t.Fatalf("%+v: pgx: %v\n%s", q, err, query)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%+v, execution %d: got total %d, %d events, want total %d, %d events\n%s",
							q, i+1, got.Total, len(got.Events), want.Total, len(want.Events), query)
					}
					gotJSON, err := json.Marshal(got)
					if err != nil {
						t.Fatal(err)
					}
					wantJSON, err := json.Marshal(want)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(gotJSON, wantJSON) {
						t.Fatalf("%+v: got JSON\n%s\nwant\n%s", q, gotJSON, wantJSON)
					}
					if !prepared {
						break
					}
				}
				events += len(want.Events)
			}
		}
	}
	if literals < 20 || prepareds < 10 || events < 500 {
		t.Errorf("checked %d literal and %d prepared statements, %d events; want at least 20, 10 and 500", literals, prepareds, events)
	}
}

// BenchmarkPageRead runs SearchEvents' page statements (pgpage) on
// PostgreSQL with 20,000 events, read through pgx (queryPage) and through
// database/sql (queryPageSQL). cpu-ns/op is this process's CPU time (user
// and system) per page: the work of the reader, without the database's.
func BenchmarkPageRead(b *testing.B) {
	ctx := context.Background()
	s, w := pageWorld(b)
	from := w.Config().Start.AddDate(0, 3, 0)
	before := from.AddDate(0, 1, 0)
	p1 := w.Projects()[1].ID
	for _, shape := range []struct {
		name string
		q    flagadmin.EventQuery
	}{
		{"none", flagadmin.EventQuery{Limit: 50}},
		{"date-range", flagadmin.EventQuery{Limit: 50, From: &from, Before: &before}},
		{"type-and-project", flagadmin.EventQuery{Limit: 50, Types: []string{flagadmin.EventFeatureStrategyUpdate}, Projects: []string{p1}}},
	} {
		q := shape.q
		query, args := s.pageStatement(q, pgpage.GenericPlanSafe(q))
		for _, reader := range []struct {
			name string
			read func(context.Context, string, []any, int) (flagadmin.EventPage, error)
		}{{"pgx", s.queryPage}, {"database-sql", s.queryPageSQL}} {
			b.Run(fmt.Sprintf("%s/%s", shape.name, reader.name), func(b *testing.B) {
				b.ReportAllocs()
				start := cpuTime(b)
				for b.Loop() {
					page, err := reader.read(ctx, query, args, q.Limit)
					if err != nil || len(page.Events) != q.Limit {
						b.Fatalf("got %d events, %v; want %d", len(page.Events), err, q.Limit)
					}
				}
				b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime returns the CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// queryPage reads a page statement with pgpage.Read on the store's readers.
func (s *Store) queryPage(ctx context.Context, query string, args []any, limit int) (flagadmin.EventPage, error) {
	return pgpage.Read(ctx, s.rdb.DB, query, args, limit)
}

// pageStatement returns q's page statement and its arguments, prepared or
// literal.
func (s *Store) pageStatement(q flagadmin.EventQuery, prepared bool) (string, []any) {
	search, _ := s.pageSearch(q)
	if prepared {
		return pgpage.Prepared(search)
	}
	return pgpage.Literal(s.rdb.QueryGen(), search)
}

// queryPageSQL reads a page statement's rows through database/sql's
// scanning: the reference the pgx reader (pgpage.Read, over pgx's raw
// values) is checked and measured against.
func (s *Store) queryPageSQL(ctx context.Context, query string, args []any, limit int) (flagadmin.EventPage, error) {
	page := flagadmin.EventPage{Events: make([]flagadmin.Event, 0, min(max(limit, 0), pgpage.Capacity))}
	rows, err := s.rdb.DB.QueryContext(ctx, query, args...)
	if err != nil {
		return page, err
	}
	defer rows.Close()
	for rows.Next() {
		total, r, ok, err := scanPageRow(rows)
		if err != nil {
			return page, err
		}
		page.Total = int(total)
		if !ok {
			continue // no event: the row of an empty page
		}
		e, err := r.Event()
		if err != nil {
			return page, err
		}
		page.Events = append(page.Events, e)
	}
	return page, rows.Err()
}

// scanPageRow reads one row of a page statement: the total, then the
// columns of pageColumns (eventColumns, in order). ok is false for the row
// of an empty page, whose event columns are null.
func scanPageRow(rows *sql.Rows) (total int64, r stored.Event, ok bool, err error) {
	var id, createdAt sql.NullInt64
	var typ, createdBy sql.NullString
	err = rows.Scan(&total, &id, &createdAt, &typ, &createdBy, &r.CreatedByUserID, &r.Environment, &r.Project,
		&r.FeatureName, &r.Data, &r.PreData, &r.Tags, &r.GroupType, &r.GroupID)
	if err != nil || !id.Valid {
		return total, r, false, err
	}
	r.ID, r.CreatedAt, r.Type, r.CreatedBy = id.Int64, createdAt.Int64, typ.String, createdBy.String
	return total, r, true, nil
}

// pageWorld opens a PostgreSQL store (skipped without a server) holding a
// generated world of 20,000 events, analyzed: the data of the page-reading
// benchmarks.
func pageWorld(b *testing.B) (*Store, *worldgen.World) {
	ctx := context.Background()
	s, err := Open(ctx, dbtest.Postgres(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	w := worldgen.MustNew(worldgen.Config{Events: 20000, Projects: 10, Features: 200, Users: 30, Groups: 4, Seed: 9})
	if err := s.Write(ctx, w.Batch()); err != nil {
		b.Fatal(err)
	}
	if err := s.InsertEvents(ctx, collect(w), 5000); err != nil {
		b.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	return s, w
}
