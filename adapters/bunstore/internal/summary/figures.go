package summary

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// The project list's figures of each project: its features, stale ones,
// potentially stale ones, members and the newest lastSeenAt of its
// features. What counts is the domain's: ProjectStatsQuery.Standing for
// features, CountedMembers for members (CountMembers), the ProjectStats
// docs for the rest (health, technical debt and the owners are the
// Service's). The statements here write the same rules in SQL, for speed
// at many projects; their only parameters, the potentially-stale
// cut-offs, come from the query (the domain's type lifetimes). The
// contract suite holds the SQL to the domain's functions, the kept
// figures (internal/projectfigures) to the computed ones, and both to
// memstore.

// Figures are the figures of one project.
type Figures struct {
	Features, Stale, PotentiallyStale, Members int64
	// Cleanup counts its features in cleanup (CleanupCondition), archived
	// ones too.
	Cleanup int64
	// LastSeenAt is the newest lastSeenAt of its features (archived ones
	// too), Unix milliseconds; nil when none was seen.
	LastSeenAt *int64
}

// ComputeFigures returns the figures of every project that has features
// or members, computed from the base tables: the plain store's, and the
// reference the kept ones are held to. The potentially stale features are
// those not archived, not stale and created before the cut-off of their
// type (q).
func ComputeFigures(ctx context.Context, db bun.IDB, q flagadmin.ProjectStatsQuery) (map[string]Figures, error) {
	out := map[string]Figures{}
	cleanup := CleanupCondition()
	rows, err := db.QueryContext(ctx, `SELECT project,
		COUNT(CASE WHEN archived_at IS NULL THEN 1 END),
		COUNT(CASE WHEN archived_at IS NULL AND stale THEN 1 END),
		COUNT(CASE WHEN `+cleanup.Text+` THEN 1 END),
		MAX(last_seen_at)
		FROM features GROUP BY project`, cleanup.Args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var f Figures
		if err := rows.Scan(&id, &f.Features, &f.Stale, &f.Cleanup, &f.LastSeenAt); err != nil {
			return nil, err
		}
		out[id] = f
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if err := AddPotentiallyStale(ctx, db, q.PotentiallyStaleBefore, out); err != nil {
		return nil, err
	}
	members, err := CountMembers(ctx, db, nil)
	for id, n := range members {
		f := out[id]
		f.Members = n
		out[id] = f
	}
	return out, err
}

// CleanupCondition is the SQL form of flagadmin.InCleanup, a condition
// on a row of features: its lifecycle stage is completed, archived or not.
func CleanupCondition() sqlq.Fragment {
	return sqlq.F("lifecycle_stage = ?", string(flagadmin.StageCompleted))
}

// AddPotentiallyStale adds to the figures' PotentiallyStale the
// features of each project that are potentially stale under cutoffs (the
// computed figures; PotentiallyStaleCounts).
func AddPotentiallyStale(ctx context.Context, db bun.IDB, cutoffs map[flagadmin.FeatureType]time.Time, out map[string]Figures) error {
	if len(cutoffs) == 0 {
		return nil
	}
	counts := PotentiallyStaleCounts(cutoffs, false)
	rs, err := db.QueryContext(ctx, counts.Text, counts.Args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	var project sql.RawBytes
	var n int64
	for rs.Next() {
		if err := rs.Scan(&project, &n); err != nil {
			return err
		}
		if f, ok := out[string(project)]; ok {
			f.PotentiallyStale += n
			out[string(project)] = f
		}
	}
	return rs.Err()
}

// PotentiallyStaleCounts is the SQL of a table (project, n): per project,
// its features that are not archived and not stale, of the types of
// cutoffs (not empty), created before their type's cut-off (the
// potentially stale ones) or, with since, at or after it (what the kept
// figures take off the fresh features of those types).
//
// Each type is a range of features_fresh (type, created_at), one arm of
// a UNION ALL: as one condition, an OR of the types' terms, SQLite read
// every feature by the index of their project (20,000 features: 9 ms,
// most of a project list), where the features created since the cut-offs
// are a few.
func PotentiallyStaleCounts(cutoffs map[flagadmin.FeatureType]time.Time, since bool) sqlq.Fragment {
	op := "<"
	if since {
		op = ">="
	}
	arms := make([]sqlq.Fragment, 0, len(cutoffs))
	for _, t := range slices.Sorted(maps.Keys(cutoffs)) {
		arms = append(arms, sqlq.F("SELECT project FROM features WHERE archived_at IS NULL AND NOT stale AND type = ? AND created_at "+op+" ?", string(t), stored.CeilMillis(cutoffs[t])))
	}
	return sqlq.Join(" UNION ALL ", arms...).Wrap("SELECT project, COUNT(*) AS n FROM (", ") f GROUP BY project")
}

// CountMembers returns the member count of each project of part (every
// project when part is nil) that has members: the SQL form of
// flagadmin.CountedMembers, the one statement of the rule, which the
// contract suite holds it to ("projects/memberCount is the domain's
// CountedMembers"). Each user with a role directly (project_members.user_id)
// and each user of a group with a role (project_members.group_id joined to
// group_members) is one (project_id, user_id) pair, and UNION, not UNION
// ALL, keeps each pair once: a user holding roles several ways counts once.
// An empty group joins no rows.
func CountMembers(ctx context.Context, db bun.IDB, part []string) (map[string]int64, error) {
	where := sqlq.F("")
	if part != nil {
		where = sqlq.In("pm.project_id", part).Wrap(" AND ", "")
	}
	q := sqlq.Fill(`SELECT m.project_id, COUNT(*) AS n FROM (
			SELECT pm.project_id, pm.user_id FROM project_members pm WHERE pm.user_id IS NOT NULL?
			UNION
			SELECT pm.project_id, gm.user_id FROM project_members pm JOIN group_members gm ON gm.group_id = pm.group_id WHERE 1 = 1?
		) m GROUP BY m.project_id`, where, where)
	var ms []struct {
		ProjectID string `bun:"project_id"`
		N         int64  `bun:"n"`
	}
	err := db.NewRaw(q.Text, q.Args...).Scan(ctx, &ms)
	counts := make(map[string]int64, len(ms))
	for _, m := range ms {
		counts[m.ProjectID] = m.N
	}
	return counts, err
}
