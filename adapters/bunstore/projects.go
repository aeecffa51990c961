package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/summary"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Project implements flagadmin.Store.
func (s *Store) Project(ctx context.Context, id string) (flagadmin.Project, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var r projectRow
	if err := s.rdb.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return flagadmin.Project{}, flagadmin.ErrNotFound
		}
		return flagadmin.Project{}, s.fail("project", err)
	}
	return r.project(), nil
}

// PrivateProjects implements flagadmin.Store.
func (s *Store) PrivateProjects(ctx context.Context) ([]string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	// Read for every search of a caller who may not see them all: kept
	// prepared (QueryPrepared), as ProjectRoles.
	rows, err := s.sqlDialect.QueryPrepared(ctx, s.rdb, sqlq.F("SELECT id FROM projects WHERE mode = ? ORDER BY id", string(flagadmin.ModePrivate)))
	if err != nil {
		return nil, s.fail("private projects", err)
	}
	ids, err := scanColumn[string](rows)
	if err != nil {
		return nil, s.fail("private projects", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return ids, nil
}

// projectRolesSQL reads the roles of a user (the value, twice) in each
// project: their own and their groups'.
const projectRolesSQL = `SELECT project_id, role FROM project_members WHERE user_id = ?
	UNION ALL
	SELECT pm.project_id, pm.role FROM project_members pm JOIN group_members gm ON gm.group_id = pm.group_id WHERE gm.user_id = ?`

// ProjectRoles implements flagadmin.Store in one query, kept prepared
// (QueryPrepared): it is read for every request of a user, and planning
// its join cost more than running it.
func (s *Store) ProjectRoles(ctx context.Context, userID int64) (map[string]flagadmin.ProjectRole, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.sqlDialect.QueryPrepared(ctx, s.rdb, sqlq.F(projectRolesSQL, userID, userID))
	if err != nil {
		return nil, s.fail("project roles", err)
	}
	defer rows.Close()
	out := map[string]flagadmin.ProjectRole{}
	for rows.Next() {
		var project, role string
		if err := rows.Scan(&project, &role); err != nil {
			return nil, s.fail("project roles", err)
		}
		if role := flagadmin.ProjectRole(role); role == flagadmin.ProjectRoleOwner || out[project] == "" {
			out[project] = role
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("project roles", err)
	}
	return out, nil
}

// ProjectStats implements flagadmin.Store in one read-only transaction:
// the projects with their figures (cleanup counts included), the time of
// their newest event and the caller's favorites in one statement
// (listedProjects), then their owners. The figures and the newest events
// are the summaries' when they keep them; else the figures are computed
// (summary.ComputeFigures) and each project's newest event looked up.
func (s *Store) ProjectStats(ctx context.Context, q flagadmin.ProjectStatsQuery) ([]flagadmin.ProjectStats, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var out []flagadmin.ProjectStats
	err := s.inReadTx(ctx, "project stats", func(ctx context.Context, tx bun.Tx) error {
		var err error
		out, err = s.projectList(ctx, tx, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// projectList reads the project list's rows (see ProjectStats).
func (s *Store) projectList(ctx context.Context, tx bun.Tx, q flagadmin.ProjectStatsQuery) ([]flagadmin.ProjectStats, error) {
	kept := s.summaries.ProjectFigures(q)
	out, at, err := s.listedProjects(ctx, tx, q, s.summaries.NewestEvents(), kept)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	if kept.Empty() {
		figures, err := summary.ComputeFigures(ctx, tx, q)
		if err != nil {
			return nil, err
		}
		for id, f := range figures {
			if i, ok := at[id]; ok {
				setFigures(&out[i], f)
			}
		}
	}
	return out, s.projectOwners(ctx, tx, out, at)
}

// setFigures sets the figures of st to f.
func setFigures(st *flagadmin.ProjectStats, f summary.Figures) {
	st.FeatureCount, st.StaleCount, st.PotentiallyStaleCount = int(f.Features), int(f.Stale), int(f.PotentiallyStale)
	st.MemberCount, st.LastReportedFlagUsage = int(f.Members), stored.TimePtr(f.LastSeenAt)
	st.CleanupCount = int(f.Cleanup)
}

// listedProjects returns the projects of q, archived or active, and their
// index by id, read in one statement, kept prepared and planned once for
// all values (QueryPlannedOnce: planned for its values at each run, it
// took 0.47-0.57 ms to plan and 0.9 ms to run on PostgreSQL, 200
// projects, 20,000 features; its generic plan runs in 0.8-1.06 ms): each
// with the time of its newest event (LastUpdatedAt) from newest, the
// summaries' table of them, when not "", else looked up in the index for
// each project (lastEventSQL, 3 ms more for 200 projects at 1,000,000
// events on PostgreSQL); its figures, cleanup count included, from kept,
// the summaries' table of them, when not empty; and whether q.FavoritesOf
// marked it favorite.
func (s *Store) listedProjects(ctx context.Context, tx bun.Tx, q flagadmin.ProjectStatsQuery, newest string, kept sqlq.Fragment) ([]flagadmin.ProjectStats, map[string]int, error) {
	stmt := projectListStatement(q, newest, kept)
	rows, err := s.sqlDialect.QueryPlannedOnce(ctx, tx, stmt)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	// Sized for as many projects as the last list held: grown from empty,
	// the slice of 200 projects was more than a quarter of the bytes a
	// list allocated.
	var (
		out       = make([]flagadmin.ProjectStats, 0, s.listedBefore.Load())
		uncounted []string
		p         projectRow
		lastEvent sql.NullInt64
		counts    [5]sql.NullInt64 // features, stale, potentially stale, members, cleanup
		lastSeen  sql.NullInt64
		favored   int64
	)
	at := make(map[string]int, cap(out))
	for rows.Next() {
		if err := rows.Scan(&p.ID, &p.Name, &p.Description, &p.Mode, &p.CreatedAt, &p.ArchivedAt, &lastEvent,
			&counts[0], &counts[1], &counts[2], &counts[3], &lastSeen, &counts[4], &favored); err != nil {
			return nil, nil, err
		}
		st := flagadmin.ProjectStats{Project: p.project(), LastUpdatedAt: stored.TimePtr(nullable(lastEvent)), Favorite: favored != 0}
		if newest != "" && !lastEvent.Valid {
			uncounted = append(uncounted, p.ID)
		}
		if !kept.Empty() {
			if !counts[0].Valid || !counts[1].Valid || !counts[2].Valid || !counts[3].Valid || !counts[4].Valid {
				return nil, nil, fmt.Errorf("the summaries keep no figures of project %q", p.ID)
			}
			setFigures(&st, summary.Figures{Features: counts[0].Int64, Stale: counts[1].Int64, PotentiallyStale: counts[2].Int64, Members: counts[3].Int64, LastSeenAt: nullable(lastSeen), Cleanup: counts[4].Int64})
		}
		at[p.ID] = len(out)
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	s.listedBefore.Store(int64(len(out)))
	return out, at, lookUpLastEvents(ctx, tx, uncounted, out, at)
}

// projectListStatement is the statement of listedProjects.
func projectListStatement(q flagadmin.ProjectStatsQuery, newest string, kept sqlq.Fragment) sqlq.Fragment {
	last, figures := sqlq.F(lastEventSQL), sqlq.F("NULL, NULL, NULL, NULL, NULL, NULL")
	favorite := sqlq.F("0")
	var joins []sqlq.Fragment
	if newest != "" {
		last = sqlq.F("l.newest")
		joins = append(joins, sqlq.F("LEFT JOIN ("+newest+") l ON l.project = p.id"))
	}
	if !kept.Empty() {
		figures = sqlq.F("f.features, f.stale, f.potentially_stale, f.members, f.last_seen_at, f.cleanup")
		joins = append(joins, kept.Wrap("LEFT JOIN (", ") f ON f.project_id = p.id"))
	}
	if q.FavoritesOf != nil {
		favorite = sqlq.F("CASE WHEN fav.user_id IS NULL THEN 0 ELSE 1 END")
		joins = append(joins, sqlq.F("LEFT JOIN project_favorites fav ON fav.project_id = p.id AND fav.user_id = ?", *q.FavoritesOf))
	}
	where := "p.archived_at IS NULL"
	if q.Archived {
		where = "p.archived_at IS NOT NULL"
	}
	return sqlq.Fill("SELECT p.id, p.name, p.description, p.mode, p.created_at, p.archived_at, ?, ?, ? FROM projects p ? WHERE "+where,
		last, figures, favorite, sqlq.Join(" ", joins...))
}

// nullable is n as a pointer: nil when NULL.
func nullable(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}

// lastEventSQL is the time of the newest event of project p: one lookup at
// the end of its range of the events_project index, (project, created_at,
// id), about 16 µs on PostgreSQL.
const lastEventSQL = "(SELECT e.created_at FROM events e WHERE e.project = p.id ORDER BY e.created_at DESC LIMIT 1)"

// lookUpLastEvents sets the LastUpdatedAt of the projects ids of out (at:
// their index) from the index: those without counted events (none, or an
// id too long to be counted).
func lookUpLastEvents(ctx context.Context, tx bun.Tx, ids []string, out []flagadmin.ProjectStats, at map[string]int) error {
	if len(ids) == 0 {
		return nil
	}
	var rows []struct {
		ID   string `bun:"id"`
		Last *int64 `bun:"last_event_at"`
	}
	in := sqlq.In("p.id", ids)
	err := tx.NewRaw("SELECT p.id, "+lastEventSQL+" AS last_event_at FROM projects p WHERE "+in.Text, in.Args...).Scan(ctx, &rows)
	for _, r := range rows {
		out[at[r.ID]].LastUpdatedAt = stored.TimePtr(r.Last)
	}
	return err
}

// projectOwners adds the owners of the projects of out: users (one
// ProjectOwner per user, shared by its projects) and groups, read by a
// statement kept prepared (QueryPrepared), which each project list runs.
// The owners of all projects share one array, each project's a slice of
// it, capped at its end.
func (s *Store) projectOwners(ctx context.Context, tx bun.Tx, out []flagadmin.ProjectStats, at map[string]int) error {
	rs, err := s.sqlDialect.QueryPrepared(ctx, tx, sqlq.F(`SELECT pm.project_id, u.id, u.name, u.username, u.email, g.id, g.name
		FROM project_members pm LEFT JOIN users u ON u.id = pm.user_id LEFT JOIN user_groups g ON g.id = pm.group_id
		WHERE pm.role = ?`, string(flagadmin.ProjectRoleOwner)))
	if err != nil {
		return err
	}
	defer rs.Close()
	type owned struct {
		project int // its index in out
		owner   flagadmin.ProjectOwner
	}
	found := make([]owned, 0, 2*len(out))
	users := make(map[int64]flagadmin.ProjectOwner, len(out))
	groups := map[int64]flagadmin.ProjectOwner{}
	var (
		project                    sql.RawBytes
		userID, groupID            sql.NullInt64
		name, username, email, grp sql.RawBytes
	)
	for rs.Next() {
		if err := rs.Scan(&project, &userID, &name, &username, &email, &groupID, &grp); err != nil {
			return err
		}
		i, ok := at[string(project)]
		if !ok {
			continue
		}
		switch {
		case userID.Valid:
			o, ok := users[userID.Int64]
			if !ok {
				o = flagadmin.UserOwner(flagadmin.User{ID: userID.Int64, Name: string(name), Username: string(username), Email: string(email)})
				users[userID.Int64] = o
			}
			found = append(found, owned{i, o})
		case groupID.Valid:
			o, ok := groups[groupID.Int64]
			if !ok {
				o = flagadmin.GroupOwner(flagadmin.Group{ID: groupID.Int64, Name: string(grp)})
				groups[groupID.Int64] = o
			}
			found = append(found, owned{i, o})
		}
	}
	if err := rs.Err(); err != nil {
		return err
	}
	// Each project's owners at its place in one array: count them, give
	// each project its slice (empty, capped at its count), then fill them.
	all := make([]flagadmin.ProjectOwner, len(found))
	counts := make([]int, len(out))
	for _, f := range found {
		counts[f.project]++
	}
	next := 0
	for i, n := range counts {
		if n > 0 {
			out[i].Owners = all[next : next : next+n]
			next += n
		}
	}
	for _, f := range found {
		out[f.project].Owners = append(out[f.project].Owners, f.owner)
	}
	return nil
}

// scanColumn reads the values of rows of one column, and closes them.
func scanColumn[T any](rows *sql.Rows) ([]T, error) {
	return sqlq.Collect(rows, func(rows *sql.Rows, v *T) error { return rows.Scan(v) })
}
