package bunstore

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/summary"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// projectRowsRecorder keeps the rows it is given.
type projectRowsRecorder struct {
	projects []summary.ProjectRow
	owners   []summary.OwnerRow
}

func (r *projectRowsRecorder) Project(p summary.ProjectRow) error {
	r.projects = append(r.projects, p)
	return nil
}

func (r *projectRowsRecorder) Owner(o summary.OwnerRow) error {
	r.owners = append(r.owners, o)
	return nil
}

// TestProjectRowsDecodedAsScanned reads the project list's rows on
// PostgreSQL both ways: decoded from pgx's raw values by the summaries, in
// their transaction, and scanned through database/sql by the core, in its
// own, with no write in between. Every
// row must be the same, for active and archived projects, with and
// without favorites, with owners that are groups and users whose name,
// username and email all differ or are empty.
func TestProjectRowsDecodedAsScanned(t *testing.T) {
	ctx := context.Background()
	s, w := postgresPageWorld(t, 7)
	project, archived := w.Projects()[0].ID, w.Config().Start.AddDate(0, 1, 0)
	owners := flagadmin.Batch{Users: []flagadmin.User{
		{Username: "ops-bot", Email: "Ops.Bot@Example.com", RootRole: flagadmin.RoleEditor},
		{Name: "Émile Zola", Username: "", Email: "", RootRole: flagadmin.RoleViewer},
	}, Groups: []flagadmin.Group{{Name: "Platform \"core\""}},
		Projects: []flagadmin.Project{{ID: "retired", Name: "Retired", Description: "gone, kept for its history", Mode: flagadmin.ModePrivate,
			CreatedAt: w.Config().Start, ArchivedAt: &archived}}}
	if err := s.Write(ctx, &owners); err != nil {
		t.Fatal(err)
	}
	members := []flagadmin.ProjectMember{{ProjectID: project,
		ProjectMembership: flagadmin.ProjectMembership{GroupID: &owners.Groups[0].ID, Role: flagadmin.ProjectRoleOwner}}}
	for _, u := range owners.Users {
		for _, p := range []string{project, "retired"} {
			members = append(members, flagadmin.ProjectMember{ProjectID: p,
				ProjectMembership: flagadmin.ProjectMembership{UserID: &u.ID, Role: flagadmin.ProjectRoleOwner}})
		}
	}
	if err := s.Write(ctx, &flagadmin.Batch{ProjectMembers: members}); err != nil {
		t.Fatal(err)
	}
	user := w.Users()[1].ID
	for _, q := range []flagadmin.ProjectStatsQuery{{}, {Archived: true}, {FavoritesOf: &user}, {Archived: true, FavoritesOf: &user}} {
		kept, newest := s.summaries.ProjectFigures(q), s.summaries.NewestEvents()
		list := projectListStatement(q, newest, kept)
		var decoded, scanned projectRowsRecorder
		read, err := s.summaries.ReadProjectRows(ctx, s.rdb, list, ownersStatement(), &decoded)
		if err != nil {
			t.Fatal(err)
		}
		if !read {
			t.Fatal("the store's summaries on PostgreSQL do not read the project list's rows")
		}
		err = s.inReadConn(ctx, "test", func(ctx context.Context, _ bun.Conn, tx bun.Tx) error {
			return s.scanProjectRows(ctx, tx, list, &scanned)
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(scanned.projects) == 0 || !reflect.DeepEqual(decoded, scanned) {
			t.Fatalf("%+v: decoded\n%+v\nscanned\n%+v", q, decoded, scanned)
		}
		if q.Archived {
			if len(scanned.projects) != 1 || !scanned.projects[0].ArchivedAt.Valid || len(scanned.owners) == 0 {
				t.Fatalf("archived: %+v", scanned)
			}
			continue
		}
		var groups, users, favorites int
		for _, o := range scanned.owners {
			if o.Group.Valid {
				groups++
			}
			if o.User.Valid && (o.Name == "" || o.Email == "") {
				users++
			}
		}
		for _, p := range scanned.projects {
			favorites += int(p.Favorite)
		}
		if groups == 0 || users < 2 || (q.FavoritesOf != nil) != (favorites > 0) {
			t.Fatalf("%+v: %d group owners, %d user owners without a name or email, %d favorites: the rows do not cover what they should", q, groups, users, favorites)
		}
	}
}

// TestProjectRowsInOneReadOnlySnapshot reads, through the summaries'
// batch on PostgreSQL, two statements in the project list's shapes that
// report the transaction they run in: both must run in one read-only
// repeatable-read transaction, seeing one snapshot, their values passed
// as the list's and the owners' are.
func TestProjectRowsInOneReadOnlySnapshot(t *testing.T) {
	ctx := context.Background()
	s, _ := postgresPageWorld(t, 8)
	list := sqlq.F(`SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only'), CAST(pg_current_snapshot() AS text), CAST(? AS text),
		CAST(? AS bigint), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0`, "a value", 7)
	owners := sqlq.F(`SELECT CAST(pg_current_snapshot() AS text), CAST(NULL AS bigint), '', '', '', CAST(NULL AS bigint), '' WHERE CAST(? AS text) = 'owners'`, "owners")
	var got projectRowsRecorder
	read, err := s.summaries.ReadProjectRows(ctx, s.rdb, list, owners, &got)
	if err != nil || !read {
		t.Fatalf("read %v, %v", read, err)
	}
	if len(got.projects) != 1 || len(got.owners) != 1 {
		t.Fatalf("got %+v", got)
	}
	p := got.projects[0]
	if p.ID != "repeatable read" || p.Name != "on" || p.Mode != "a value" || p.CreatedAt != 7 {
		t.Errorf("the list's statement ran with isolation %q, read only %q, values %q and %d; want repeatable read, on, \"a value\" and 7", p.ID, p.Name, p.Mode, p.CreatedAt)
	}
	if p.Description != got.owners[0].Project {
		t.Errorf("the two statements saw snapshots %s and %s", p.Description, got.owners[0].Project)
	}
}

// TestProjectRowsAfterAFailedStatement fails the list's statement of the
// summaries' batch on PostgreSQL, its transaction begun, on a pool of one
// connection: the error must be the statement's, and the next list must
// be read (the pool must not hand out a connection inside the aborted
// transaction).
func TestProjectRowsAfterAFailedStatement(t *testing.T) {
	ctx := context.Background()
	s, _ := postgresPageWorld(t, 9)
	s.rdb.DB.SetMaxOpenConns(1)
	failing := sqlq.F(`SELECT '', '', '', '', 1 / CAST(? AS bigint), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0`, 0)
	var none projectRowsRecorder
	_, err := s.summaries.ReadProjectRows(ctx, s.rdb, failing, ownersStatement(), &none)
	if err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Fatalf("a failing list's statement: %v, want division by zero", err)
	}
	q := flagadmin.ProjectStatsQuery{}
	list := projectListStatement(q, s.summaries.NewestEvents(), s.summaries.ProjectFigures(q))
	var got projectRowsRecorder
	if _, err := s.summaries.ReadProjectRows(ctx, s.rdb, list, ownersStatement(), &got); err != nil {
		t.Fatalf("the list after a failed one: %v", err)
	}
	if len(got.projects) == 0 {
		t.Fatal("the list after a failed one holds no project")
	}
}
