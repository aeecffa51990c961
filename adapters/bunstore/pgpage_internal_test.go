package bunstore

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/pgpage"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/summary"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

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
				{RequireProject: true, HiddenProjects: []string{p1, p2}, From: &from, Before: &before},
				{Types: []string{flagadmin.EventFeatureUpdated}, HiddenProjects: []string{p1, p2, "no-such-project"}, Before: &midDay},
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
		search, seeks := s.pageSearch(q)
		if !pgpage.GenericPlanSafe(q) || seeks {
			continue
		}
		checked++
		literal, _ := pgpage.Literal(s.rdb.QueryGen(), search)
		want, err := pgpage.Read(ctx, s.rdb.DB, literal, nil, q.Limit)
		if err != nil {
			t.Fatalf("%+v: literal: %v", q, err)
		}
		prepared, args := pgpage.Prepared(search)
		for _, v := range slicesOf(q) {
			if strings.Contains(prepared, "'"+v+"'") {
				t.Errorf("%+v: the prepared statement holds the value %q: %s", q, v, prepared)
			}
		}
		for i := range 7 { // the 6th execution on a connection may use the generic plan
			got, err := pgpage.Read(ctx, s.rdb.DB, prepared, args, q.Limit)
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

// pageSearch is what SearchEvents builds q's page statement from, and
// whether q's page is found by a seek instead.
func (s *Store) pageSearch(q flagadmin.EventQuery) (summary.Page, bool) {
	plan := s.summaries.PlanSearch(q)
	return summary.Page{Query: q, Total: s.total(q, plan), Where: s.pageWhere}, plan.Seek != nil
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

// TestPagesReadARangeOnPostgres: a page of at most one column filter of
// one value reads its rows as a range of an index, from the newest match
// or from the page's first row: its plan looks no row up by its id (the
// primary key), at any offset, for any caller.
func TestPagesReadARangeOnPostgres(t *testing.T) {
	s, w := postgresPageWorld(t, 5)
	p1 := w.Projects()[1].ID
	from := w.Config().Start.AddDate(0, 6, 0)
	before := from.AddDate(0, 2, 0)
	for _, offset := range []int{0, 3, 120} {
		for _, q := range []flagadmin.EventQuery{
			{},
			{Features: []string{w.Features()[3].Name}},
			{Projects: []string{p1}},
			{Types: []string{flagadmin.EventFeatureStrategyUpdate}, RequireProject: true, HiddenProjects: []string{p1}},
			{From: &from, Before: &before},
		} {
			q.Limit, q.Offset = 50, offset
			search, seeks := s.pageSearch(q)
			if seeks || !pgpage.GenericPlanSafe(q) {
				t.Fatalf("%+v: not a one-statement page", q)
			}
			literal, _ := pgpage.Literal(s.rdb.QueryGen(), search)
			root, plan := planOf(t, s, literal, nil)
			for n := range root.all() {
				if n.Index == "events_pkey" {
					t.Errorf("%+v: the page looks its rows up by id:\n%s", q, plan)
					break
				}
			}
		}
	}
}

// TestPagesPlannedOnceOnPostgres: a prepared page statement whose values
// the custom plans would see (the hidden projects of a caller, an
// offset) is planned once for all of them: after PostgreSQL's five custom
// plans, the pages of other offsets run its generic plan.
func TestPagesPlannedOnceOnPostgres(t *testing.T) {
	ctx := context.Background()
	s, w := onePostgresConnection(t)
	hidden := []string{w.Projects()[1].ID, w.Projects()[2].ID, w.Projects()[3].ID}
	// With the planner's statistics, custom plans estimate the hidden
	// projects' share from their values.
	if _, err := s.rdb.ExecContext(ctx, "ANALYZE events, event_counts"); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		q := flagadmin.EventQuery{Limit: 50, Offset: 3 + 37*i, RequireProject: true, HiddenProjects: hidden}
		if page := readPrepared(t, s, q); len(page.Events) != q.Limit {
			t.Fatalf("the page at offset %d holds %d events, want %d", q.Offset, len(page.Events), q.Limit)
		}
	}
	checkPlannedOnce(t, s, "WITH t AS %")
}

// TestDatedPagesPlannedOnceOnPostgres: the page of a date range for a
// caller with several hidden projects, whose events in the range the
// total counts, is prepared too and planned once for every range.
func TestDatedPagesPlannedOnceOnPostgres(t *testing.T) {
	ctx := context.Background()
	s, w := onePostgresConnection(t)
	if _, err := s.rdb.ExecContext(ctx, "ANALYZE events, event_counts"); err != nil {
		t.Fatal(err)
	}
	hidden := []string{w.Projects()[1].ID, w.Projects()[2].ID, w.Projects()[3].ID}
	for i := range 8 {
		from := w.Config().Start.AddDate(0, 2*i, 0)
		before := from.AddDate(0, 1, 0)
		readPrepared(t, s, flagadmin.EventQuery{Limit: 50, RequireProject: true, HiddenProjects: hidden, From: &from, Before: &before})
	}
	checkPlannedOnce(t, s, "WITH t AS %")
}

// readPrepared reads the page of q, which must be a one-statement page
// that is prepared (GenericPlanSafe), by its prepared statement.
func readPrepared(t *testing.T, s *Store, q flagadmin.EventQuery) flagadmin.EventPage {
	t.Helper()
	search, seeks := s.pageSearch(q)
	if seeks || !pgpage.GenericPlanSafe(q) {
		t.Fatalf("%+v: not a prepared one-statement page", q)
	}
	text, args := pgpage.Prepared(search)
	page, err := pgpage.Read(context.Background(), s.rdb.DB, text, args, q.Limit)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// TestTextPagesPlannedOnceOnPostgres: the page of a free-text query
// without other filters is prepared and planned once for every text (its
// values hidden from the planner), and that one plan finds the candidates
// in the token index, not by reading every event; a text with a type
// filter is written with its values, planned for them.
func TestTextPagesPlannedOnceOnPostgres(t *testing.T) {
	ctx := context.Background()
	s, w := onePostgresConnection(t)
	if _, err := s.rdb.ExecContext(ctx, "ANALYZE events, search_tokens"); err != nil {
		t.Fatal(err)
	}
	hidden := []string{w.Projects()[1].ID, w.Projects()[2].ID}
	texts := []string{worldgen.RareWord}
	for _, f := range w.Features()[:7] {
		texts = append(texts, f.Name)
	}
	for _, text := range texts {
		q := flagadmin.EventQuery{Text: text, Limit: 20, RequireProject: true, HiddenProjects: hidden}
		page, err := s.SearchEvents(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if page.Total == 0 {
			t.Fatalf("query %q: no match", text)
		}
	}
	checkPlannedOnce(t, s, "WITH m AS MATERIALIZED %")

	q := flagadmin.EventQuery{Text: texts[1], Limit: 20, RequireProject: true, HiddenProjects: hidden}
	text, args := pgpage.TextStatement(s.rdb.QueryGen(), q, s.filter(q), s.after(q))
	if len(args) == 0 || args[0] != pgx.QueryExecModeCacheStatement || strings.Contains(text, texts[1]) {
		t.Errorf("free text alone is not prepared: %s %v", text, args)
	}
	// A world this small is read whole, whatever the plan: with
	// sequential scans off the plan shows which index it would read.
	if _, err := s.rdb.ExecContext(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	root, plan := planOf(t, s, text, args[1:])
	if _, err := s.rdb.ExecContext(ctx, "RESET enable_seqscan"); err != nil {
		t.Fatal(err)
	}
	tokens := false
	for n := range root.all() {
		if n.Relation == "events" && n.Type == "Seq Scan" {
			t.Errorf("the plan reads every event:\n%s", plan)
		}
		tokens = tokens || n.Index == "events_payload_tokens"
	}
	if !tokens {
		t.Errorf("the plan does not read the token index:\n%s", plan)
	}

	q.Types = []string{flagadmin.EventFeatureCreated}
	if text, args := pgpage.TextStatement(s.rdb.QueryGen(), q, s.filter(q), s.after(q)); len(args) != 0 || !strings.Contains(text, texts[1]) {
		t.Errorf("free text with a type filter is prepared: %s %v", text, args)
	}
}
