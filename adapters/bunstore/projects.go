package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Project implements flagadmin.Store.
func (s *Store) Project(ctx context.Context, id string) (flagadmin.Project, error) {
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
	var ids []string
	err := s.rdb.NewSelect().Model((*projectRow)(nil)).Column("id").
		Where("mode = ?", string(flagadmin.ModePrivate)).Order("id").Scan(ctx, &ids)
	if err != nil {
		return nil, s.fail("private projects", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return ids, nil
}

// ProjectRoles implements flagadmin.Store in one query.
func (s *Store) ProjectRoles(ctx context.Context, userID int64) (map[string]flagadmin.ProjectRole, error) {
	var rows []struct {
		ProjectID string `bun:"project_id"`
		Role      string `bun:"role"`
	}
	err := s.rdb.NewRaw(`SELECT project_id, role FROM project_members WHERE user_id = ?
		UNION ALL
		SELECT pm.project_id, pm.role FROM project_members pm JOIN group_members gm ON gm.group_id = pm.group_id WHERE gm.user_id = ?`,
		userID, userID).Scan(ctx, &rows)
	if err != nil {
		return nil, s.fail("project roles", err)
	}
	out := map[string]flagadmin.ProjectRole{}
	for _, r := range rows {
		if role := flagadmin.ProjectRole(r.Role); role == flagadmin.ProjectRoleOwner || out[r.ProjectID] == "" {
			out[r.ProjectID] = role
		}
	}
	return out, nil
}

// ProjectStats implements flagadmin.Store with at most six queries whatever
// the number of projects, in one read-only transaction: the projects with
// their newest event, feature figures, member counts, user owners, group
// owners and favorites.
func (s *Store) ProjectStats(ctx context.Context, q flagadmin.ProjectStatsQuery) ([]flagadmin.ProjectStats, error) {
	archived := "p.archived_at IS NULL"
	if q.Archived {
		archived = "p.archived_at IS NOT NULL"
	}
	var out []*flagadmin.ProjectStats
	err := s.inReadTx(ctx, "project stats", func(ctx context.Context, tx bun.Tx) error {
		out = nil
		var projects []struct {
			projectRow
			LastUpdatedAt *int64 `bun:"last_updated_at"`
		}
		// The newest event per project is one index probe on
		// events (project, created_at, id) per project.
		err := tx.NewRaw(`SELECT p.id, p.name, p.description, p.mode, p.created_at, p.archived_at,
			(SELECT MAX(e.created_at) FROM events e WHERE e.project = p.id) AS last_updated_at
			FROM projects p WHERE `+archived).Scan(ctx, &projects)
		if err != nil {
			return err
		}
		byID := make(map[string]*flagadmin.ProjectStats, len(projects))
		for _, p := range projects {
			st := &flagadmin.ProjectStats{Project: p.project(), LastUpdatedAt: timePtr(p.LastUpdatedAt)}
			byID[p.ID] = st
			out = append(out, st)
		}
		if len(out) == 0 {
			return nil
		}

		potential, potentialArgs := potentiallyStaleSQL(q.PotentiallyStaleBefore)
		var features []struct {
			Project          string `bun:"project"`
			FeatureCount     int    `bun:"feature_count"`
			StaleCount       int    `bun:"stale_count"`
			PotentiallyStale int    `bun:"potentially_stale_count"`
			LastSeenAt       *int64 `bun:"last_seen_at"`
		}
		err = tx.NewRaw(`SELECT f.project,
			COUNT(CASE WHEN f.archived_at IS NULL THEN 1 END) AS feature_count,
			COUNT(CASE WHEN f.archived_at IS NULL AND f.stale THEN 1 END) AS stale_count,
			COUNT(CASE WHEN f.archived_at IS NULL AND NOT f.stale AND (`+potential+`) THEN 1 END) AS potentially_stale_count,
			MAX(f.last_seen_at) AS last_seen_at
			FROM features f JOIN projects p ON p.id = f.project
			WHERE `+archived+` GROUP BY f.project`, potentialArgs...).Scan(ctx, &features)
		if err != nil {
			return err
		}
		for _, f := range features {
			if st := byID[f.Project]; st != nil {
				st.FeatureCount, st.StaleCount, st.PotentiallyStaleCount = f.FeatureCount, f.StaleCount, f.PotentiallyStale
				st.LastReportedFlagUsage = timePtr(f.LastSeenAt)
			}
		}

		var members []struct {
			ProjectID string `bun:"project_id"`
			Count     int    `bun:"member_count"`
		}
		err = tx.NewRaw(`SELECT m.project_id, COUNT(DISTINCT m.user_id) AS member_count FROM (
				SELECT pm.project_id, pm.user_id FROM project_members pm WHERE pm.user_id IS NOT NULL
				UNION
				SELECT pm.project_id, gm.user_id FROM project_members pm JOIN group_members gm ON gm.group_id = pm.group_id
			) m JOIN projects p ON p.id = m.project_id
			WHERE `+archived+` GROUP BY m.project_id`).Scan(ctx, &members)
		if err != nil {
			return err
		}
		for _, m := range members {
			if st := byID[m.ProjectID]; st != nil {
				st.MemberCount = m.Count
			}
		}

		var userOwners []struct {
			ProjectID string `bun:"project_id"`
			userRow
		}
		err = tx.NewRaw(`SELECT pm.project_id, u.id, u.name, u.username, u.email, u.root_role, u.is_service
			FROM project_members pm JOIN users u ON u.id = pm.user_id JOIN projects p ON p.id = pm.project_id
			WHERE pm.role = ? AND `+archived, string(flagadmin.ProjectRoleOwner)).Scan(ctx, &userOwners)
		if err != nil {
			return err
		}
		for _, o := range userOwners {
			if st := byID[o.ProjectID]; st != nil {
				st.Owners = append(st.Owners, flagadmin.UserOwner(o.user()))
			}
		}

		var groupOwners []struct {
			ProjectID string `bun:"project_id"`
			ID        int64  `bun:"id"`
			Name      string `bun:"name"`
		}
		err = tx.NewRaw(`SELECT pm.project_id, g.id, g.name
			FROM project_members pm JOIN user_groups g ON g.id = pm.group_id JOIN projects p ON p.id = pm.project_id
			WHERE pm.role = ? AND `+archived, string(flagadmin.ProjectRoleOwner)).Scan(ctx, &groupOwners)
		if err != nil {
			return err
		}
		for _, o := range groupOwners {
			if st := byID[o.ProjectID]; st != nil {
				st.Owners = append(st.Owners, flagadmin.ProjectOwner{OwnerType: flagadmin.OwnerGroup, ID: o.ID, Name: o.Name})
			}
		}

		if q.FavoritesOf != nil {
			var favorites []string
			err = tx.NewSelect().Model((*favoriteRow)(nil)).Column("project_id").
				Where("user_id = ?", *q.FavoritesOf).Scan(ctx, &favorites)
			if err != nil {
				return err
			}
			for _, id := range favorites {
				if st := byID[id]; st != nil {
					st.Favorite = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res := make([]flagadmin.ProjectStats, len(out))
	for i, st := range out {
		res[i] = *st
	}
	return res, nil
}

// potentiallyStaleSQL is the condition "created before the cut-off of its
// type" over the features f, with its arguments.
func potentiallyStaleSQL(cutoffs map[flagadmin.FeatureType]time.Time) (string, []any) {
	if len(cutoffs) == 0 {
		return "1 = 0", nil
	}
	var terms []string
	var args []any
	for _, t := range slices.Sorted(maps.Keys(cutoffs)) {
		terms = append(terms, "(f.type = ? AND f.created_at < ?)")
		args = append(args, string(t), ceilMillis(cutoffs[t]))
	}
	return strings.Join(terms, " OR "), args
}
