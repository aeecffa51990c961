package bunstore

import (
	"context"
	"database/sql"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

func TestGenericPlanSafe(t *testing.T) {
	day := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		q    flagadmin.EventQuery
		want bool
	}{
		{"no filter", flagadmin.EventQuery{Limit: 50}, true},
		{"one type", flagadmin.EventQuery{Limit: 50, Types: []string{"a"}}, true},
		{"one project and a date range", flagadmin.EventQuery{Limit: 50, Projects: []string{"p"}, From: &day, Before: &day}, true},
		{"one creator, hidden projects", flagadmin.EventQuery{Limit: 50, CreatedByUserIDs: []int64{1}, RequireProject: true, HiddenProjects: []string{"p", "q"}}, true},
		{"date range, one hidden project", flagadmin.EventQuery{Limit: 50, From: &day, HiddenProjects: []string{"p"}}, true},
		{"two types, read apart", flagadmin.EventQuery{Limit: 50, Types: []string{"a", "b"}}, true},
		{"five projects and a date range, read apart", flagadmin.EventQuery{Limit: 50, Projects: []string{"a", "b", "c", "d", "e"}, From: &day}, true},
		{"two types, hidden projects", flagadmin.EventQuery{Limit: 50, Types: []string{"a", "b"}, RequireProject: true}, false},
		{"two types, a deep page", flagadmin.EventQuery{Limit: 50, Offset: 951, Types: []string{"a", "b"}}, false},
		{"nine types", flagadmin.EventQuery{Limit: 50, Types: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}}, false},
		{"a type twice", flagadmin.EventQuery{Limit: 50, Types: []string{"a", "a"}}, false},
		{"type and project", flagadmin.EventQuery{Limit: 50, Types: []string{"a"}, Projects: []string{"p"}}, false},
		{"feature and group", flagadmin.EventQuery{Limit: 50, Features: []string{"f"}, GroupIDs: []string{"g1"}}, false},
		{"date range, two hidden projects", flagadmin.EventQuery{Limit: 50, Before: &day, HiddenProjects: []string{"p", "q"}}, false},
		{"free text", flagadmin.EventQuery{Limit: 50, Text: "x"}, false},
	}
	for _, tc := range tests {
		if got := genericPlanSafe(tc.q); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// postgresPageWorld opens a store on a fresh PostgreSQL database (skipping
// without one) holding a generated world of 3,000 events of seed.
func postgresPageWorld(t *testing.T, seed uint64) (*Store, *worldgen.World) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, dbtest.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	w := worldgen.MustNew(worldgen.Config{Events: 3000, Projects: 10, Features: 120, Users: 30, Groups: 4, Seed: seed})
	if err := s.Write(ctx, w.Batch()); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertEvents(ctx, collect(w), 1000); err != nil {
		t.Fatal(err)
	}
	return s, w
}

// TestPreparedPagesAgreeWithLiterals runs the page statement of queries of
// every shape that genericPlanSafe admits both ways on PostgreSQL: with its
// values written into the text, and prepared with placeholders, often
// enough that PostgreSQL switches to its generic plan. The pages must be
// the same, and the prepared text must hold no value.
func TestPreparedPagesAgreeWithLiterals(t *testing.T) {
	ctx := context.Background()
	s, w := postgresPageWorld(t, 5)
	projects := w.Projects()
	p1, p2 := projects[1].ID, projects[2].ID
	feature := w.Features()[3].Name
	user := w.Users()[2].ID
	from := w.Config().Start.AddDate(0, 6, 0)
	before := from.AddDate(0, 2, 0)
	midDay := from.Add(36*time.Hour + 5*time.Millisecond) // not a whole day: counted
	var queries []flagadmin.EventQuery
	for _, limit := range []int{50, 7} {
		for _, offset := range []int{0, 3, 2990, 5000} {
			for _, q := range []flagadmin.EventQuery{
				{},
				{Types: []string{flagadmin.EventFeatureStrategyUpdate}},
				{Types: []string{flagadmin.EventFeatureArchived}},
				{Projects: []string{p1}},
				{Features: []string{feature}},
				{CreatedByUserIDs: []int64{user}},
				{Environments: []string{"production"}},
				{From: &from, Before: &before},
				{From: &midDay},
				{Projects: []string{p2}, From: &from, Before: &before},
				{Types: []string{flagadmin.EventFeatureUpdated}, Before: &midDay},
				{RequireProject: true, HiddenProjects: []string{p1, p2}},
				{RequireProject: true, HiddenProjects: []string{p1}, From: &from},
				{Types: []string{flagadmin.EventFeatureStrategyUpdate}, RequireProject: true, HiddenProjects: []string{p2}},
				{Projects: []string{p1}, RequireProject: true, HiddenProjects: []string{p1}},
				{Projects: []string{"no-such-project"}},
				{Types: []string{flagadmin.EventFeatureArchived, flagadmin.EventFeatureCreated}},
				{Types: []string{flagadmin.EventFeatureStrategyUpdate, flagadmin.EventFeatureArchived, "no-such-type"}},
				{Projects: []string{p1, p2, "no-such-project"}, From: &from, Before: &before},
				{CreatedByUserIDs: []int64{user, user + 1}, Before: &midDay},
				{Features: []string{feature, w.Features()[4].Name}},
			} {
				q.Limit, q.Offset = limit, offset
				queries = append(queries, q)
			}
		}
	}
	checked := 0
	for _, q := range queries {
		plan := planTotal(q)
		if !genericPlanSafe(q) || plan.seekable(q) {
			continue
		}
		checked++
		literal, _, err := s.pageStatement(q, plan, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.queryPage(ctx, literal, nil, q.Limit)
		if err != nil {
			t.Fatalf("%+v: literal: %v", q, err)
		}
		prepared, args, err := s.pageStatement(q, plan, &sqlArgs{})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range slicesOf(q) {
			if strings.Contains(prepared, "'"+v+"'") {
				t.Errorf("%+v: the prepared statement holds the value %q: %s", q, v, prepared)
			}
		}
		for i := range 7 { // the 6th execution on a connection may use the generic plan
			got, err := s.queryPage(ctx, prepared, args, q.Limit)
			if err != nil {
				t.Fatalf("%+v: prepared: %v\n%s", q, err, prepared)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%+v, execution %d: got total %d, %d events, want total %d, %d events\n%s",
					q, i+1, got.Total, len(got.Events), want.Total, len(want.Events), prepared)
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked %d queries, want at least 100", checked)
	}
}

// collect returns all of w's events.
func collect(w *worldgen.World) []flagadmin.Event {
	var out []flagadmin.Event
	for b := range w.Events(1000) {
		out = append(out, b...)
	}
	return out
}

// slicesOf returns the string values of q's filters.
func slicesOf(q flagadmin.EventQuery) []string {
	var out []string
	for _, vs := range [][]string{q.Features, q.Projects, q.Types, q.Environments, q.HiddenProjects} {
		out = append(out, vs...)
	}
	return out
}

// unconnectedPostgres returns a store that writes PostgreSQL SQL but has
// never connected: enough to build statements.
func unconnectedPostgres(t *testing.T) *Store {
	t.Helper()
	sqldb, err := sql.Open("pgx", "postgres://nobody@127.0.0.1:1/none")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqldb.Close() })
	db := bun.NewDB(sqldb, pgdialect.New())
	return &Store{db: db, rdb: db, dialect: dialect.PG}
}

// TestPageQueryWrittenTwice writes the page query of queries of every
// statement shape (split filters, a cursor, the day and key totals, hidden
// projects, an offset) twice and in parts: the text and the arguments must
// not depend on how often Bun writes a query, as they did when
// placeholders were numbered as they were written.
func TestPageQueryWrittenTwice(t *testing.T) {
	s := unconnectedPostgres(t)
	from := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	before := from.AddDate(0, 2, 0)
	after := &flagadmin.EventPosition{CreatedAt: from, ID: 42}
	for _, q := range []flagadmin.EventQuery{
		{Limit: 50},
		{Limit: 50, Offset: 20, Types: []string{"a"}},
		{Limit: 50, Types: []string{"a", "b", "c"}, From: &from},
		{Limit: 50, Projects: []string{"p", "q"}, After: after},
		{Limit: 50, Projects: []string{"p"}, From: &from, Before: &before},
		{Limit: 50, From: &from, Before: &before, RequireProject: true, HiddenProjects: []string{"h"}},
		{Limit: 50, CreatedByUserIDs: []int64{7}, RequireProject: true, HiddenProjects: []string{"h", "i"}},
	} {
		plan := planTotal(q)
		a := &sqlArgs{}
		query := s.pageQuery(q, plan, a)
		first, err := query.AppendQuery(s.rdb.QueryGen(), nil)
		if err != nil {
			t.Fatal(err)
		}
		firstArgs, err := a.values()
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		firstArgs = slices.Clone(firstArgs)
		second, err := query.AppendQuery(s.rdb.QueryGen(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(second) != string(first) {
			t.Errorf("%+v: written twice, got\n%s\nwant\n%s", q, second, first)
		}
		if !reflect.DeepEqual(a.vals, firstArgs) {
			t.Errorf("%+v: written twice, got arguments %v, want %v", q, a.vals, firstArgs)
		}
		// Each $n of the text has its argument, and each argument its $n.
		for n := 1; n <= len(firstArgs)+1; n++ {
			p := "$" + strconv.Itoa(n)
			in := strings.Contains(string(first)+" ", p+" ") || strings.Contains(string(first), p+",") || strings.Contains(string(first), p+")")
			if in != (n <= len(firstArgs)) {
				t.Errorf("%+v: %s in the text: %v, with %d arguments\n%s", q, p, in, len(firstArgs), first)
			}
		}
		// The statement pageStatement returns is the same text.
		text, args, err := s.pageStatement(q, plan, &sqlArgs{})
		if err != nil {
			t.Fatal(err)
		}
		if text != string(first) || !reflect.DeepEqual(args[1:], firstArgs) {
			t.Errorf("%+v: pageStatement differs from pageQuery written once", q)
		}
	}
}

// TestSQLArgsBoundNotWritten checks that a value bound but left out of the
// statement is an error rather than a gap in the $n.
func TestSQLArgsBoundNotWritten(t *testing.T) {
	s := unconnectedPostgres(t)
	a := &sqlArgs{}
	one, unused, three := a.bind(1), a.bind(2), a.bind(3)
	_ = unused
	b, err := s.rdb.NewSelect().TableExpr("events").Where("id = ? OR id = ?", one, three).AppendQuery(s.rdb.QueryGen(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `SELECT * FROM events WHERE (id = $1 OR id = $3)`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	if _, err := a.values(); err == nil || !strings.Contains(err.Error(), "$2") {
		t.Errorf("got error %v, want one about $2", err)
	}
}
