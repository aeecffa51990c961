package bunstore

import (
	"context"
	"encoding/json"
	"iter"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/eventcounts"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/pgpage"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// TestRepeatedReadsArePreparedOnPostgres: on PostgreSQL the reads that
// requests repeat with other values are kept prepared on the connection
// (QueryPrepared), not parsed and planned anew each time: the statements
// of a page found by the counts at a large offset (the months, the
// hidden projects' months, the days, then the page), a user's project
// access, the project list's owners and the
// store's version. Each, run on a pool of one connection,
// is then among the connection's prepared statements.
func TestRepeatedReadsArePreparedOnPostgres(t *testing.T) {
	ctx := context.Background()
	s, w := onePostgresConnection(t)
	q := flagadmin.EventQuery{Limit: 50, Offset: eventcounts.SeekMinOffset + 500, HiddenProjects: []string{w.Projects()[1].ID}}
	page, err := s.SearchEvents(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != q.Limit {
		t.Fatalf("the page at offset %d holds %d events, want %d", q.Offset, len(page.Events), q.Limit)
	}
	if _, err := s.ProjectAccess(ctx, w.Users()[2].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ProjectStats(ctx, flagadmin.ProjectStatsQuery{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Version(ctx); err != nil {
		t.Fatal(err)
	}
	var prepared []string
	if err := s.rdb.NewRaw("SELECT statement FROM pg_prepared_statements").Scan(ctx, &prepared); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(prepared, "\n")
	for what, text := range map[string]string{
		"the months":                  "SELECT num, SUM(n) AS n, SUM(c) AS c, (COALESCE((SELECT SUM(n) FROM event_counts",
		"the hidden projects' months": "SELECT num, SUM(n) AS n FROM (SELECT num, n FROM event_counts WHERE dim = ",
		"the days":                    "SUM(c) AS c FROM (SELECT num, n, 1 AS c FROM (SELECT num, SUM(n) AS n FROM event_counts WHERE dim = ",
		"the page":                    "(e.created_at, e.id) <= (SELECT created_at, id FROM events WHERE ",
		"the project access":          "FROM projects WHERE mode = $3",
		"the project owners":          "WHERE pm.role = $1",
		"the version":                 versionSQL,
	} {
		if !strings.Contains(all, text) {
			t.Errorf("%s not prepared (no statement holds %q); prepared:\n%s", what, text, all)
		}
	}
}

// TestSeekPagePlannedOnceOnPostgres: the page found by the counts at a
// large offset, kept prepared, is planned once for every offset
// (PreparedOffset): after PostgreSQL's five custom plans of a prepared
// statement, the pages of other offsets run its generic plan.
func TestSeekPagePlannedOnceOnPostgres(t *testing.T) {
	ctx := context.Background()
	s, w := onePostgresConnection(t)
	for i := range 8 {
		q := flagadmin.EventQuery{Limit: 50, Offset: eventcounts.SeekMinOffset + 100 + 37*i, HiddenProjects: []string{w.Projects()[1].ID}}
		page, err := s.SearchEvents(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) != q.Limit {
			t.Fatalf("the page at offset %d holds %d events, want %d", q.Offset, len(page.Events), q.Limit)
		}
	}
	checkPlannedOnce(t, s, "%(e.created_at, e.id) <= (SELECT created_at, id FROM events WHERE %")
}

// checkPlannedOnce fails t unless the connection's prepared statement
// whose text is LIKE like has run its generic plan.
func checkPlannedOnce(t *testing.T, s *Store, like string) {
	t.Helper()
	var generic, custom int64
	err := s.rdb.QueryRowContext(context.Background(), "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE ?", like).Scan(&generic, &custom)
	if err != nil {
		t.Fatal(err)
	}
	if generic == 0 {
		t.Errorf("the page of 8 offsets was planned for each (%d custom plans, %d runs of the generic one)", custom, generic)
	}
}

// onePostgresConnection is a PostgreSQL store of a small world whose reads
// run on one connection, once the appender is done with the pool: the
// statements a test runs are then that connection's.
func onePostgresConnection(t *testing.T) (*Store, *worldgen.World) {
	t.Helper()
	s, w := postgresPageWorld(t, 7)
	if _, err := s.LogSize(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.rdb.DB.SetMaxOpenConns(1)
	return s, w
}

// TestSeekPageReadsARangeOnPostgres: on PostgreSQL the page found by the
// counts at a large offset is read as a range of events_created from its
// first row on (summaries.ReadPageIn, pgpage.SeekRange), not by its rows' ids: its plan reads
// events by no other index and looks no row up by its id.
func TestSeekPageReadsARangeOnPostgres(t *testing.T) {
	s, w := postgresPageWorld(t, 7)
	q := flagadmin.EventQuery{Limit: 50, HiddenProjects: []string{w.Projects()[1].ID}}
	root, plan := seekPagePlan(t, s, w, q)
	reads := 0
	for n := range root.all() {
		if n.Relation != "events" {
			continue
		}
		if n.Index != "events_created" {
			t.Errorf("the page reads events by %s %q, want events_created alone:\n%s", n.Type, n.Index, plan)
		}
		if n.Type == "Index Scan" {
			reads++
		}
	}
	if reads != 1 {
		t.Errorf("the page's rows are read by %d index scans, want 1 (the range):\n%s", reads, plan)
	}
}

// TestHiddenProjectsLookedUpByHashOnPostgres: on PostgreSQL a caller's
// hidden projects are looked up in a hash table built once per statement
// (stored.ProjectHidden), not compared with each row in turn: every scan
// of events in the plan of a hidden caller's page at a large offset, which
// tests each row it skips, filters first by a hashed SubPlan; the
// comparison with each hidden project (<> ALL) comes after it, for the
// rows it finds hidden alone.
func TestHiddenProjectsLookedUpByHashOnPostgres(t *testing.T) {
	s, w := postgresPageWorld(t, 7)
	var hidden []string
	for _, p := range w.Projects()[:4] {
		hidden = append(hidden, p.ID)
	}
	q := flagadmin.EventQuery{Limit: 50, RequireProject: true, HiddenProjects: hidden}
	root, plan := seekPagePlan(t, s, w, q)
	scans := 0
	for n := range root.all() {
		if n.Relation != "events" {
			continue
		}
		scans++
		hashed, each := strings.Index(n.Filter, "NOT (hashed SubPlan"), strings.Index(n.Filter, "<> ALL")
		if hashed < 0 || each >= 0 && each < hashed {
			t.Errorf("%s of events filters by %q, want the hidden projects looked up by a hashed SubPlan first:\n%s", n.Type, n.Filter, plan)
		}
	}
	if scans != 2 {
		t.Errorf("the page scans events %d times, want 2 (its first row, then its rows):\n%s", scans, plan)
	}
}

// seekPagePlan returns the plan of the page of q that the counts found at
// offset 700 of the events before the end of w, as planOf gives it.
func seekPagePlan(t *testing.T, s *Store, w *worldgen.World, q flagadmin.EventQuery) (*planNode, string) {
	t.Helper()
	where := sqlq.And(s.pageWhere(q), sqlq.F("created_at < ?", w.Config().End.UnixMilli()))
	text, args := pgpage.Rows(pgpage.SeekRange(where, q.Limit, sqlq.F(s.sqlDialect.PreparedOffset(), 700)), sqlq.Fragment{})
	return planOf(t, s, text, args)
}

// planOf returns the plan of the statement text with its arguments args
// ($n placeholders, or none with its values written in it), as EXPLAIN
// (FORMAT JSON) gives it: its root node and its text.
func planOf(t *testing.T, s *Store, text string, args []any) (*planNode, string) {
	t.Helper()
	var plan string
	if err := s.rdb.DB.QueryRowContext(context.Background(), "EXPLAIN (FORMAT JSON) "+text, args...).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var nodes []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(plan), &nodes); err != nil || len(nodes) != 1 {
		t.Fatalf("EXPLAIN: %v\n%s", err, plan)
	}
	return &nodes[0].Plan, plan
}

// planNode is a node of a plan of EXPLAIN (FORMAT JSON).
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Filter   string     `json:"Filter"`
	Plans    []planNode `json:"Plans"`
}

// all yields n and the nodes under it.
func (n *planNode) all() iter.Seq[*planNode] {
	return func(yield func(*planNode) bool) {
		n.walk(yield)
	}
}

func (n *planNode) walk(yield func(*planNode) bool) bool {
	if !yield(n) {
		return false
	}
	for i := range n.Plans {
		if !n.Plans[i].walk(yield) {
			return false
		}
	}
	return true
}

// TestSeekPageRowsReadInTheTransaction: the rows of a page found by a
// seek, read on the driver's connection (summaries.ReadPageIn), are read
// in the transaction of the counts that found it: an event committed
// meanwhile by another connection is not among them.
func TestSeekPageRowsReadInTheTransaction(t *testing.T) {
	ctx := context.Background()
	s, w := postgresPageWorld(t, 7)
	late := flagadmin.Event{Type: flagadmin.EventFeatureCreated, CreatedBy: "late", CreatedAt: w.Config().End.AddDate(1, 0, 0)}
	var events []flagadmin.Event
	err := s.inReadConn(ctx, "test", func(ctx context.Context, conn bun.Conn, tx bun.Tx) error {
		var n int64
		if err := tx.NewRaw("SELECT COUNT(*) FROM events").Scan(ctx, &n); err != nil {
			return err
		}
		if err := s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{late}}); err != nil {
			return err
		}
		var read bool
		var err error
		events, _, read, err = s.summaries.ReadPageIn(ctx, conn, sqlq.F("1 = 1"), 5, sqlq.Fragment{}, sqlq.Fragment{})
		if !read {
			t.Fatal("the tuned store on PostgreSQL did not read the rows on the connection")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 5 {
		t.Fatalf("read %d events, want 5", len(events))
	}
	if events[0].CreatedBy == "late" {
		t.Error("the rows read on the connection hold an event committed after the transaction's first read")
	}
	page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Limit: 1})
	if err != nil || len(page.Events) != 1 || page.Events[0].CreatedBy != "late" {
		t.Fatalf("after the transaction, the newest event is %+v (%v), want the late one", page.Events, err)
	}
}

// TestProjectListPlannedOnceOnPostgres: the project list's statement is
// planned once for all its values (the caller whose favorites it marks,
// the times of potentially stale features), not at every run.
func TestProjectListPlannedOnceOnPostgres(t *testing.T) {
	ctx := context.Background()
	s, w := onePostgresConnection(t)
	if _, err := s.rdb.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	now := w.Config().End
	for i, u := range w.Users()[:8] {
		q := flagadmin.ProjectStatsQuery{FavoritesOf: &u.ID, PotentiallyStaleBefore: flagadmin.PotentiallyStaleCutoffs(now.Add(time.Duration(i) * time.Minute))}
		stats, err := s.ProjectStats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(stats) == 0 {
			t.Fatal("no project listed")
		}
	}
	checkPlannedOnce(t, s, "SELECT p.id, p.name, %")
	// Planned once whatever the statistics: on a database where seeing
	// the values makes each custom plan look a little cheaper (200
	// projects, 20,000 features), PostgreSQL would plan every run for
	// them; no value of the statement is shown to the planner.
	var text string
	if err := s.rdb.QueryRowContext(ctx, "SELECT statement FROM pg_prepared_statements WHERE statement LIKE 'SELECT p.id, p.name, %'").Scan(&text); err != nil {
		t.Fatal(err)
	}
	for _, at := range regexp.MustCompile(`\$[0-9]+`).FindAllStringIndex(text, -1) {
		if !strings.HasSuffix(text[:at[0]], "(SELECT CAST(") {
			t.Errorf("the project list shows the planner its value %s:\n%s", text[at[0]:at[1]], text)
		}
	}
}
