package bunstore

import (
	"context"
	"reflect"
	"testing"

	"github.com/uptrace/bun"

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
// PostgreSQL both ways in one transaction: decoded from pgx's raw values
// by the summaries, and scanned through database/sql by the core. Every
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
		err := s.inReadConn(ctx, "test", func(ctx context.Context, conn bun.Conn, tx bun.Tx) error {
			read, err := s.summaries.ReadProjectRows(ctx, conn, list, ownersStatement(), &decoded)
			if err != nil {
				return err
			}
			if !read {
				t.Fatal("the store's summaries on PostgreSQL do not read the project list's rows")
			}
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
