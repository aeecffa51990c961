package bunstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"

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
	ctx, cancel := s.bound(ctx)
	defer cancel()
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

// ProjectStats implements flagadmin.Store in one read-only transaction of
// at most four queries whatever the number of projects: the projects with
// their figures kept at write time (project_stats, see projectstats.go), the
// features that became fresh since their type's cut-off, the owners, and the
// caller's favorites.
func (s *Store) ProjectStats(ctx context.Context, q flagadmin.ProjectStatsQuery) ([]flagadmin.ProjectStats, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var out []flagadmin.ProjectStats
	err := s.inReadTx(ctx, "project stats", func(ctx context.Context, tx bun.Tx) error {
		var err error
		out, err = projectFigures(ctx, tx, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
