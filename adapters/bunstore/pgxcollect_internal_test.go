package bunstore

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/pgpage"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// pageRow is one row of a page statement for pgx.RowToStructByPos: the
// total, then the columns of pageColumns; the event columns are null in the
// row of an empty page.
type pageRow struct {
	Total           int64
	ID              *int64
	CreatedAt       *int64
	Type            *string
	CreatedBy       *string
	CreatedByUserID *int64
	Environment     *string
	Project         *string
	FeatureName     *string
	Data            []byte
	PreData         []byte
	Tags            *string
	GroupType       *string
	GroupID         *string
}

// appendTo appends the event of r to page, unless r is the row of an
// empty page.
func (r *pageRow) appendTo(page *flagadmin.EventPage) error {
	if r.ID == nil {
		return nil
	}
	tags, err := stored.Tags(r.Tags)
	if err != nil {
		return err
	}
	page.Events = append(page.Events, flagadmin.Event{
		ID: *r.ID, CreatedAt: stored.Time(*r.CreatedAt), Type: *r.Type, CreatedBy: *r.CreatedBy,
		CreatedByUserID: r.CreatedByUserID, Environment: r.Environment, Project: r.Project, FeatureName: r.FeatureName,
		Data: json.RawMessage(r.Data), PreData: json.RawMessage(r.PreData), Tags: tags, GroupType: r.GroupType, GroupID: r.GroupID,
	})
	return nil
}

// queryPageWith answers a page statement on the pgx connection under
// database/sql, reading its rows with read.
func (s *Store) queryPageWith(ctx context.Context, query string, args []any, limit int, read func(pgx.Rows, *flagadmin.EventPage) error) (flagadmin.EventPage, error) {
	page := flagadmin.EventPage{Events: make([]flagadmin.Event, 0, min(max(limit, 0), pgpage.Capacity))}
	conn, err := s.rdb.DB.Conn(ctx)
	if err != nil {
		return page, err
	}
	defer conn.Close()
	err = pgpage.OnPgx(conn, func(pc *pgx.Conn) error {
		rows, err := pc.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		return read(rows, &page)
	})
	return page, err
}

// queryPageCollect is queryPage with pgx's own row collection
// (pgx.CollectRows, pgx.RowToStructByPos) and pgx's codecs for every
// column: the candidate that BenchmarkPageDecode measures against the
// hand-written decoding.
func (s *Store) queryPageCollect(ctx context.Context, query string, args []any, limit int) (flagadmin.EventPage, error) {
	return s.queryPageWith(ctx, query, args, limit, func(rows pgx.Rows, page *flagadmin.EventPage) error {
		prs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[pageRow])
		if err != nil {
			return err
		}
		for i := range prs {
			if i == 0 {
				page.Total = int(prs[i].Total)
			}
			if err := prs[i].appendTo(page); err != nil {
				return err
			}
		}
		return nil
	})
}

// queryPageScan is queryPage with pgx.ForEachRow: each row scanned by
// pgx's codecs into the same typed values, then made an event.
func (s *Store) queryPageScan(ctx context.Context, query string, args []any, limit int) (flagadmin.EventPage, error) {
	return s.queryPageWith(ctx, query, args, limit, func(rows pgx.Rows, page *flagadmin.EventPage) error {
		var r pageRow
		_, err := pgx.ForEachRow(rows, []any{&r.Total, &r.ID, &r.CreatedAt, &r.Type, &r.CreatedBy, &r.CreatedByUserID,
			&r.Environment, &r.Project, &r.FeatureName, &r.Data, &r.PreData, &r.Tags, &r.GroupType, &r.GroupID}, func() error {
			page.Total = int(r.Total)
			return r.appendTo(page)
		})
		return err
	})
}

// BenchmarkPageDecode reads pages of 100 and 1,000 events of a generated
// world (worldgen's JSON payloads, 20,000 events) on PostgreSQL with each
// reader: queryPage (the hand-written decoding of pgx's raw values),
// queryPageCollect (pgx.CollectRows with RowToStructByPos) and
// queryPageScan (pgx.ForEachRow into typed values), each with the prepared
// statement (binary format) and the literal one (text format). cpu-ns/op
// is this process's CPU time per page: the reader's work without the
// database's. Compare with benchstat:
//
//	go test ./adapters/bunstore -run '^$' -bench BenchmarkPageDecode -count 5 | tee pages.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /reader pages.txt
func BenchmarkPageDecode(b *testing.B) {
	ctx := context.Background()
	s, _ := pageWorld(b)
	for _, limit := range []int{100, 1000} {
		q := flagadmin.EventQuery{Limit: limit, Offset: 500}
		for _, mode := range []string{"prepared", "literal"} {
			query, args := s.pageStatement(q, mode == "prepared")
			for _, reader := range []struct {
				name string
				read func(context.Context, string, []any, int) (flagadmin.EventPage, error)
			}{{"hand", s.queryPage}, {"collect", s.queryPageCollect}, {"scan", s.queryPageScan}} {
				b.Run(fmt.Sprintf("rows=%d/%s/reader=%s", limit, mode, reader.name), func(b *testing.B) {
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
}
