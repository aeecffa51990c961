package bunstore

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Figures of the project list kept at write time. project_stats holds one
// row per project, written in the same transaction as every change it
// summarises, so the project list reads a row per project instead of
// grouping the features, members and events of every project on each call:
//
//   - features, stale: the project's non-archived features, and those of
//     them that are stale;
//   - fresh_<type>: its non-archived, non-stale features of each type. The
//     potentially stale features of a type (not stale, created before the
//     type's cut-off, which moves with the clock) are fresh_<type> minus the
//     ones created since the cut-off, counted at read time from a partial
//     index (features_fresh) that holds only non-archived, non-stale
//     features in (type, created_at) order: the recent ones are few;
//   - members: distinct users with a role, directly or through a group;
//   - last_seen_at: the newest lastSeenAt of its features (archived too).
//
// What counts is the domain's: ProjectStatsQuery.Standing for features,
// CountedMembers for members (countMembers), the ProjectStats docs for
// owners (health, technical debt and the owners' order are the Service's,
// from the raw figures returned here). The statements here write the same
// rules in SQL, for speed at many projects; their only parameters, the
// potentially-stale cut-offs, come from the query (the domain's type
// lifetimes). The contract suite holds the SQL to the domain's functions.
//
// The newest createdAt of its events is kept apart, in project_last_events
// (lastevent.go), so that event writers do not queue on this row.
//
// Writers: Write (new projects get a row computed from the tables; feature
// inserts add to it; member and group changes recount members), UpdateFeature
// (the old figures of the feature are taken away and the new ones added) and
// DeleteUser (members recounted). A transaction updates the rows of several
// projects in project id order, and always before project_last_events and
// event_counts, so writers lock rows in one order.

// projectStatsSchema is the table of figures, one row per project, as
// migration project_stats creates it: migration project_last_events then
// drops its last_event_at.
var projectStatsSchema = []table{{name: "project_stats", body: `
		project_id {KEY} NOT NULL PRIMARY KEY,
		features BIGINT NOT NULL,
		stale BIGINT NOT NULL,
		fresh_release BIGINT NOT NULL,
		fresh_experiment BIGINT NOT NULL,
		fresh_operational BIGINT NOT NULL,
		fresh_kill_switch BIGINT NOT NULL,
		fresh_permission BIGINT NOT NULL,
		members BIGINT NOT NULL,
		last_seen_at BIGINT NULL,
		last_event_at BIGINT NULL,
		FOREIGN KEY (project_id) REFERENCES projects (id) ON DELETE CASCADE`}}

// freshIndex is the index of non-archived, non-stale features by type and
// creation time (MySQL, without partial indexes, indexes every feature).
const freshIndex = "features_fresh"

// freshIndexSQL creates freshIndex unless it exists.
func freshIndexSQL(name dialect.Name) string {
	if name == dialect.MySQL {
		return "CREATE INDEX " + freshIndex + " ON features (type, created_at)"
	}
	return "CREATE INDEX IF NOT EXISTS " + freshIndex + " ON features (type, created_at, project) WHERE archived_at IS NULL AND NOT stale"
}

// freshColumns is the fresh_<type> column of each feature type. A feature
// of a type without a column counts in features and stale only; a project
// list asking about such a type counts its features directly (slower).
var freshColumns = map[flagadmin.FeatureType]string{
	flagadmin.TypeRelease:     "fresh_release",
	flagadmin.TypeExperiment:  "fresh_experiment",
	flagadmin.TypeOperational: "fresh_operational",
	flagadmin.TypeKillSwitch:  "fresh_kill_switch",
	flagadmin.TypePermission:  "fresh_permission",
}

// freshColumnList is freshColumns' columns in FeatureTypes order.
var freshColumnList = func() []string {
	var out []string
	for _, t := range flagadmin.FeatureTypes() {
		if c, ok := freshColumns[t]; ok {
			out = append(out, c)
		}
	}
	return out
}()

// statsChunk bounds the project ids of one IN list or multi-row statement.
const statsChunk = 500

// migrateProjectStats creates project_stats and features_fresh and fills
// the table from the data already stored. It can run again after a failure
// part-way (MySQL cannot roll DDL back): the table is emptied and refilled.
func migrateProjectStats(ctx context.Context, db *bun.DB) error {
	name := db.Dialect().Name()
	if err := createSchema(ctx, db, projectStatsSchema); err != nil {
		return err
	}
	if name == dialect.MySQL {
		var n int
		err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.STATISTICS
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'features' AND INDEX_NAME = ?`, freshIndex).Scan(&n)
		if err != nil {
			return err
		}
		if n == 0 {
			if _, err := db.ExecContext(ctx, freshIndexSQL(name)); err != nil {
				return err
			}
		}
	}
	fill := func(ctx context.Context, tx bun.IDB) error {
		if name != dialect.MySQL {
			if _, err := tx.ExecContext(ctx, freshIndexSQL(name)); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM project_stats"); err != nil {
			return err
		}
		return insertProjectStats(ctx, tx, nil)
	}
	if name == dialect.SQLite {
		return fill(ctx, db) // already inside the migration lock's transaction
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return fill(ctx, tx) })
}

// projectStatsRow is a row of project_stats.
type projectStatsRow struct {
	bun.BaseModel `bun:"table:project_stats"`

	ProjectID        string `bun:"project_id,pk"`
	Features         int64  `bun:"features"`
	Stale            int64  `bun:"stale"`
	FreshRelease     int64  `bun:"fresh_release"`
	FreshExperiment  int64  `bun:"fresh_experiment"`
	FreshOperational int64  `bun:"fresh_operational"`
	FreshKillSwitch  int64  `bun:"fresh_kill_switch"`
	FreshPermission  int64  `bun:"fresh_permission"`
	Members          int64  `bun:"members"`
	LastSeenAt       *int64 `bun:"last_seen_at"`
}

// fresh returns the fresh_<type> field of column c.
func (r *projectStatsRow) fresh(c string) *int64 {
	switch c {
	case "fresh_release":
		return &r.FreshRelease
	case "fresh_experiment":
		return &r.FreshExperiment
	case "fresh_operational":
		return &r.FreshOperational
	case "fresh_kill_switch":
		return &r.FreshKillSwitch
	case "fresh_permission":
		return &r.FreshPermission
	}
	panic("bunstore: unknown project_stats column " + c)
}

// inChunks calls fn with successive parts of ids of at most statsChunk.
func inChunks(ids []string, fn func(part []string) error) error {
	for start := 0; start < len(ids); start += statsChunk {
		if err := fn(ids[start:min(len(ids), start+statsChunk)]); err != nil {
			return err
		}
	}
	return nil
}

// computeProjectStats computes the rows of the projects ids (every project
// when ids is nil) from the tables.
func computeProjectStats(ctx context.Context, db bun.IDB, ids []string) ([]projectStatsRow, error) {
	var rows []projectStatsRow
	at := map[string]int{}
	projects := func(where string, args ...any) error {
		var ids []string
		err := db.NewRaw("SELECT p.id FROM projects p"+where, args...).Scan(ctx, &ids)
		for _, id := range ids {
			at[id] = len(rows)
			rows = append(rows, projectStatsRow{ProjectID: id})
		}
		return err
	}
	var cols strings.Builder
	var typeArgs []any
	for _, t := range flagadmin.FeatureTypes() {
		if c, ok := freshColumns[t]; ok {
			fmt.Fprintf(&cols, ", COUNT(CASE WHEN archived_at IS NULL AND NOT stale AND type = ? THEN 1 END) AS %s", c)
			typeArgs = append(typeArgs, string(t))
		}
	}
	features := func(where string, args ...any) error {
		rs, err := db.QueryContext(ctx, `SELECT project,
			COUNT(CASE WHEN archived_at IS NULL THEN 1 END),
			COUNT(CASE WHEN archived_at IS NULL AND stale THEN 1 END)`+cols.String()+`,
			MAX(last_seen_at)
			FROM features`+where+` GROUP BY project`, append(slices.Clone(typeArgs), args...)...)
		if err != nil {
			return err
		}
		defer rs.Close()
		var r projectStatsRow
		dest := []any{&r.ProjectID, &r.Features, &r.Stale}
		for _, c := range freshColumnList {
			dest = append(dest, r.fresh(c))
		}
		dest = append(dest, &r.LastSeenAt)
		for rs.Next() {
			r.LastSeenAt = nil
			if err := rs.Scan(dest...); err != nil {
				return err
			}
			if i, ok := at[r.ProjectID]; ok {
				rows[i] = r
			}
		}
		return rs.Err()
	}
	members := func(part []string) error {
		counts, err := countMembers(ctx, db, part)
		for id, n := range counts {
			if i, ok := at[id]; ok {
				rows[i].Members = n
			}
		}
		return err
	}
	if ids == nil {
		for _, step := range []func(string, ...any) error{projects, features} {
			if err := step(""); err != nil {
				return nil, err
			}
		}
		return rows, members(nil)
	}
	err := inChunks(ids, func(part []string) error {
		if err := projects(" WHERE p.id IN (?)", bun.In(part)); err != nil {
			return err
		}
		if err := features(" WHERE project IN (?)", bun.In(part)); err != nil {
			return err
		}
		return members(part)
	})
	return rows, err
}

// countMembers returns the member count of each project of part (every
// project when part is nil) that has members: the SQL form of
// flagadmin.CountedMembers, the one statement of the rule, which the
// contract suite holds it to ("projects/memberCount is the domain's
// CountedMembers"). Each user with a role directly (project_members.user_id)
// and each user of a group with a role (project_members.group_id joined to
// group_members) is one (project_id, user_id) pair, and UNION, not UNION
// ALL, keeps each pair once: a user holding roles several ways counts once.
// An empty group joins no rows.
func countMembers(ctx context.Context, db bun.IDB, part []string) (map[string]int64, error) {
	where, args := "", []any{}
	if part != nil {
		where, args = " AND pm.project_id IN (?)", []any{bun.In(part)}
	}
	var ms []struct {
		ProjectID string `bun:"project_id"`
		N         int64  `bun:"n"`
	}
	err := db.NewRaw(`SELECT m.project_id, COUNT(*) AS n FROM (
			SELECT pm.project_id, pm.user_id FROM project_members pm WHERE pm.user_id IS NOT NULL`+where+`
			UNION
			SELECT pm.project_id, gm.user_id FROM project_members pm JOIN group_members gm ON gm.group_id = pm.group_id WHERE 1 = 1`+where+`
		) m GROUP BY m.project_id`, append(slices.Clone(args), args...)...).Scan(ctx, &ms)
	counts := make(map[string]int64, len(ms))
	for _, m := range ms {
		counts[m.ProjectID] = m.N
	}
	return counts, err
}

// insertProjectStats inserts the computed rows of the projects ids (every
// project when ids is nil), which must have none yet.
func insertProjectStats(ctx context.Context, db bun.IDB, ids []string) error {
	rows, err := computeProjectStats(ctx, db, ids)
	if err != nil {
		return err
	}
	for start := 0; start < len(rows); start += statsChunk {
		part := rows[start:min(len(rows), start+statsChunk)]
		if _, err := db.NewInsert().Model(&part).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// statsChange is what a write changes in the row of one project.
type statsChange struct {
	features, stale int64
	fresh           map[string]int64 // by column
	lastSeenAt      *int64           // raise last_seen_at to this
	recountLastSeen bool             // recompute last_seen_at from the features
	recountMembers  bool
}

// statsChanges collects the changes of one transaction by project.
type statsChanges map[string]*statsChange

func (c statsChanges) of(project string) *statsChange {
	ch := c[project]
	if ch == nil {
		ch = &statsChange{fresh: map[string]int64{}}
		c[project] = ch
	}
	return ch
}

// feature adds (sign 1) or takes away (sign -1) the figures of feature r.
func (c statsChanges) feature(r featureRow, sign int64) {
	ch := c.of(r.Project)
	if r.ArchivedAt != nil {
		return
	}
	ch.features += sign
	if r.Stale {
		ch.stale += sign
	} else if col, ok := freshColumns[flagadmin.FeatureType(r.Type)]; ok {
		ch.fresh[col] += sign
	}
}

// seen raises the project's last_seen_at to ms.
func (c statsChanges) seen(project string, ms *int64) {
	if ms == nil {
		return
	}
	ch := c.of(project)
	if ch.lastSeenAt == nil || *ch.lastSeenAt < *ms {
		v := *ms
		ch.lastSeenAt = &v
	}
}

// apply writes the changes, project by project in id order.
func (c statsChanges) apply(ctx context.Context, db bun.IDB) error {
	if len(c) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(c))
	var recount []string
	for _, id := range ids {
		if c[id].recountMembers {
			recount = append(recount, id)
		}
	}
	members := map[string]int64{}
	if len(recount) > 0 {
		err := inChunks(recount, func(part []string) error {
			counts, err := countMembers(ctx, db, part)
			maps.Copy(members, counts)
			return err
		})
		if err != nil {
			return err
		}
	}
	for _, id := range ids {
		ch := c[id]
		var sets []string
		var args []any
		add := func(col string, n int64) {
			if n != 0 {
				sets = append(sets, col+" = "+col+" + ?")
				args = append(args, n)
			}
		}
		add("features", ch.features)
		add("stale", ch.stale)
		for _, col := range freshColumnList {
			add(col, ch.fresh[col])
		}
		if ch.recountMembers {
			sets = append(sets, "members = ?")
			args = append(args, members[id])
		}
		switch {
		case ch.recountLastSeen:
			sets = append(sets, "last_seen_at = (SELECT MAX(f.last_seen_at) FROM features f WHERE f.project = ?)")
			args = append(args, id)
		case ch.lastSeenAt != nil:
			sets = append(sets, "last_seen_at = CASE WHEN last_seen_at IS NULL OR last_seen_at < ? THEN ? ELSE last_seen_at END")
			args = append(args, *ch.lastSeenAt, *ch.lastSeenAt)
		}
		if len(sets) == 0 {
			continue
		}
		args = append(args, id)
		if _, err := db.ExecContext(ctx, "UPDATE project_stats SET "+strings.Join(sets, ", ")+" WHERE project_id = ?", args...); err != nil {
			return err
		}
	}
	return nil
}

// writeProjectStats keeps project_stats up to date with what write stored
// of b (before its events): rows for new projects, feature inserts, member
// changes.
func writeProjectStats(ctx context.Context, tx bun.IDB, b *flagadmin.Batch) error {
	created := map[string]bool{}
	var newIDs []string
	for _, p := range b.Projects {
		if !created[p.ID] {
			created[p.ID] = true
			newIDs = append(newIDs, p.ID)
		}
	}
	// New rows are computed after the batch's features and members are
	// stored; nobody else can lock them yet.
	if len(newIDs) > 0 {
		if err := insertProjectStats(ctx, tx, newIDs); err != nil {
			return err
		}
	}
	c := statsChanges{}
	for _, f := range b.Features {
		if created[f.Project] {
			continue
		}
		r := featureRow{Project: f.Project, Type: string(f.Type), Stale: f.Stale, ArchivedAt: millisPtr(f.ArchivedAt)}
		c.feature(r, 1)
		c.seen(f.Project, millisPtr(f.LastSeenAt))
	}
	for _, pm := range b.ProjectMembers {
		if !created[pm.ProjectID] {
			c.of(pm.ProjectID).recountMembers = true
		}
	}
	groups := map[int64]bool{}
	for _, gm := range b.GroupMembers {
		groups[gm.GroupID] = true
	}
	if len(groups) > 0 {
		var projects []string
		err := tx.NewRaw("SELECT DISTINCT project_id FROM project_members WHERE group_id IN (?)",
			bun.In(slices.Sorted(maps.Keys(groups)))).Scan(ctx, &projects)
		if err != nil {
			return err
		}
		for _, p := range projects {
			if !created[p] {
				c.of(p).recountMembers = true
			}
		}
	}
	return c.apply(ctx, tx)
}

// updateFeatureStats applies the change of one feature from old to new (the
// rows before and after UpdateFeature), after the feature row is saved.
func updateFeatureStats(ctx context.Context, tx bun.IDB, old, new featureRow) error {
	c := statsChanges{}
	c.feature(old, -1)
	c.feature(new, 1)
	switch {
	case old.LastSeenAt != nil && (new.LastSeenAt == nil || *new.LastSeenAt < *old.LastSeenAt):
		c.of(new.Project).recountLastSeen = true
	case new.LastSeenAt != nil && (old.LastSeenAt == nil || *new.LastSeenAt > *old.LastSeenAt):
		c.seen(new.Project, new.LastSeenAt)
	}
	return c.apply(ctx, tx)
}

// userProjects returns the projects in which user id holds a role, directly
// or through a group: those whose member count a deletion of the user changes.
func userProjects(ctx context.Context, tx bun.IDB, id int64) ([]string, error) {
	var projects []string
	err := tx.NewRaw(`SELECT project_id FROM project_members WHERE user_id = ?
		UNION
		SELECT pm.project_id FROM project_members pm JOIN group_members gm ON gm.group_id = pm.group_id WHERE gm.user_id = ?`,
		id, id).Scan(ctx, &projects)
	return projects, err
}

// recountMembers recounts the members of projects.
func recountMembers(ctx context.Context, tx bun.IDB, projects []string) error {
	c := statsChanges{}
	for _, p := range projects {
		c.of(p).recountMembers = true
	}
	return c.apply(ctx, tx)
}

// projectFigures reads the project list's rows: the projects (archived or
// active) with their stats, the recent fresh features, owners and favorites.
// See ProjectStats.
func projectFigures(ctx context.Context, tx bun.Tx, q flagadmin.ProjectStatsQuery) ([]flagadmin.ProjectStats, error) {
	archived := "p.archived_at IS NULL"
	if q.Archived {
		archived = "p.archived_at IS NOT NULL"
	}
	// Potentially stale = fresh features of the cut-off types minus those
	// created since the cut-off, when every type has a fresh column.
	types := slices.Sorted(maps.Keys(q.PotentiallyStaleBefore))
	fast := true
	var freshSum []string
	for _, t := range types {
		col, ok := freshColumns[t]
		if !ok {
			fast = false
			break
		}
		freshSum = append(freshSum, "s."+col)
	}
	freshExpr := "0"
	if fast && len(freshSum) > 0 {
		freshExpr = strings.Join(freshSum, " + ")
	}
	rs, err := tx.QueryContext(ctx, `SELECT p.id, p.name, p.description, p.mode, p.created_at, p.archived_at,
		s.project_id, s.features, s.stale, `+freshExpr+`, s.members, s.last_seen_at, l.last_event_at
		FROM projects p LEFT JOIN project_stats s ON s.project_id = p.id`+lastEventsJoin+` WHERE `+archived)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []flagadmin.ProjectStats
	at := map[string]int{}
	var (
		r                              projectRow
		statsID                        sql.NullString
		features, stale, fresh, member sql.NullInt64
		lastSeen, lastEvent            sql.NullInt64
	)
	nullable := func(v sql.NullInt64) *int64 {
		if !v.Valid {
			return nil
		}
		return &v.Int64
	}
	for rs.Next() {
		r.ArchivedAt = nil
		if err := rs.Scan(&r.ID, &r.Name, &r.Description, &r.Mode, &r.CreatedAt, &r.ArchivedAt,
			&statsID, &features, &stale, &fresh, &member, &lastSeen, &lastEvent); err != nil {
			return nil, err
		}
		if !statsID.Valid {
			return nil, fmt.Errorf("project %q has no row in project_stats", r.ID)
		}
		at[r.ID] = len(out)
		out = append(out, flagadmin.ProjectStats{
			Project:               r.project(),
			FeatureCount:          int(features.Int64),
			StaleCount:            int(stale.Int64),
			PotentiallyStaleCount: int(fresh.Int64),
			MemberCount:           int(member.Int64),
			LastUpdatedAt:         timePtr(nullable(lastEvent)),
			LastReportedFlagUsage: timePtr(nullable(lastSeen)),
		})
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	rs.Close()
	if len(out) == 0 {
		return nil, nil
	}

	if len(types) > 0 {
		if err := potentiallyStale(ctx, tx, q.PotentiallyStaleBefore, fast, out, at); err != nil {
			return nil, err
		}
	}
	if err := projectOwners(ctx, tx, out, at); err != nil {
		return nil, err
	}
	if q.FavoritesOf != nil {
		var favorites []string
		err = tx.NewSelect().Model((*favoriteRow)(nil)).Column("project_id").
			Where("user_id = ?", *q.FavoritesOf).Scan(ctx, &favorites)
		if err != nil {
			return nil, err
		}
		for _, id := range favorites {
			if i, ok := at[id]; ok {
				out[i].Favorite = true
			}
		}
	}
	return out, nil
}

// potentiallyStale completes PotentiallyStaleCount of out. fast: it holds
// the fresh features of the cut-off types, from which those created since
// their type's cut-off (few, read from features_fresh) are taken away. Else
// it is set from a count of every feature of the cut-off types.
func potentiallyStale(ctx context.Context, tx bun.Tx, cutoffs map[flagadmin.FeatureType]time.Time, fast bool, out []flagadmin.ProjectStats, at map[string]int) error {
	var terms []string
	var args []any
	for _, t := range slices.Sorted(maps.Keys(cutoffs)) {
		if fast {
			terms = append(terms, "(type = ? AND created_at >= ?)")
		} else {
			terms = append(terms, "(type = ? AND created_at < ?)")
		}
		args = append(args, string(t), ceilMillis(cutoffs[t]))
	}
	rs, err := tx.QueryContext(ctx, `SELECT project, COUNT(*) FROM features
		WHERE archived_at IS NULL AND NOT stale AND (`+strings.Join(terms, " OR ")+`) GROUP BY project`, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	var project sql.RawBytes
	var n int
	for rs.Next() {
		if err := rs.Scan(&project, &n); err != nil {
			return err
		}
		i, ok := at[string(project)]
		switch {
		case !ok:
		case fast:
			out[i].PotentiallyStaleCount -= n
		default:
			out[i].PotentiallyStaleCount = n
		}
	}
	return rs.Err()
}

// projectOwners adds the owners of the projects of out: users (one
// ProjectOwner per user, shared by its projects) and groups.
func projectOwners(ctx context.Context, tx bun.Tx, out []flagadmin.ProjectStats, at map[string]int) error {
	rs, err := tx.QueryContext(ctx, `SELECT pm.project_id, u.id, u.name, u.username, u.email, g.id, g.name
		FROM project_members pm LEFT JOIN users u ON u.id = pm.user_id LEFT JOIN user_groups g ON g.id = pm.group_id
		WHERE pm.role = ?`, string(flagadmin.ProjectRoleOwner))
	if err != nil {
		return err
	}
	defer rs.Close()
	users := map[int64]flagadmin.ProjectOwner{}
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
			out[i].Owners = append(out[i].Owners, o)
		case groupID.Valid:
			o, ok := groups[groupID.Int64]
			if !ok {
				o = flagadmin.GroupOwner(flagadmin.Group{ID: groupID.Int64, Name: string(grp)})
				groups[groupID.Int64] = o
			}
			out[i].Owners = append(out[i].Owners, o)
		}
	}
	return rs.Err()
}

// unmigrateProjectStats drops project_stats and features_fresh.
func unmigrateProjectStats(ctx context.Context, db *bun.DB) error {
	drop := "DROP INDEX IF EXISTS " + freshIndex
	if db.Dialect().Name() == dialect.MySQL {
		drop = "DROP INDEX " + freshIndex + " ON features"
	}
	if err := dropSchema(ctx, db, projectStatsSchema); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, drop)
	return err
}
