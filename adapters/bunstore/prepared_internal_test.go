package bunstore

import (
	"context"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/eventcounts"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// TestRepeatedReadsArePreparedOnPostgres: on PostgreSQL the reads that
// requests repeat with other values are kept prepared on the connection
// (QueryPrepared), not parsed and planned anew each time: the statements
// of a page found by the counts at a large offset (the months, the
// hidden projects' months, the days, then the page), a user's project
// roles, the private projects, the project list's owners and the
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
	if _, err := s.ProjectRoles(ctx, w.Users()[2].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PrivateProjects(ctx); err != nil {
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
		"the days":                    "0 AS extra FROM (SELECT num, n, 1 AS c FROM (SELECT num, SUM(n) AS n FROM event_counts WHERE dim = ",
		"the page":                    "FROM (SELECT id FROM events WHERE ",
		"the project roles":           "FROM project_members WHERE user_id = $1",
		"the private projects":        "FROM projects WHERE mode = $1",
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
	var generic, custom int64
	err := s.rdb.QueryRowContext(ctx, "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%FROM (SELECT id FROM events WHERE %'").Scan(&generic, &custom)
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
