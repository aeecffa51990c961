package unleashimport

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// world is everything but the events, mapped.
type world struct {
	batch flagadmin.Batch
	// secrets are the clear secrets of batch.Tokens, in the same order (for seed files).
	secrets []string
	users   map[int64]bool
	groups  map[int64]bool
	// projects maps a project id to its index in batch.Projects.
	projects map[string]int
	// roles are Unleash's roles by id.
	roles map[int64]role
	now   time.Time
	// featuresKey fingerprints what the flags were mapped from (reader.reuse);
	// reused, when set, holds the flags of an earlier reading with the same
	// key, which then stand for batch.Features.
	featuresKey string
	reused      map[string]flagadmin.Feature
}

type role struct{ name, typ string }

// reader reads a source in one snapshot transaction.
type reader struct {
	src  *Source
	tx   pgx.Tx
	sum  *Summary
	prog *progress
	// batchSize is how many events go to emit at a time.
	batchSize int
	// keyFeatures makes readFeatures fingerprint the rows the flags are
	// mapped from (world.featuresKey); with reuse, the flags of an earlier
	// reading whose fingerprint is the same are kept instead of read again.
	keyFeatures bool
	reuse       *worldState
}

// each runs query and calls scan for each row.
func (r *reader) each(ctx context.Context, query string, scan func(pgx.Rows) error) error {
	rows, err := r.tx.Query(ctx, query)
	if err != nil {
		return sourceFailure(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return sourceFailure(err)
	}
	return nil
}

// sourceFailure is an error of the source, in one line without SQL.
func sourceFailure(err error) error {
	if err == context.Canceled || err == context.DeadlineExceeded {
		return err
	}
	return fmt.Errorf("reading the Unleash database failed: %s", connectReason(err))
}

// col is the column expression when the schema has it, else fallback.
func (r *reader) col(table, column, expr, fallback string) string {
	if r.src.Has(table, column) {
		return expr
	}
	return fallback
}

// readWorld reads and maps everything but the events.
func (r *reader) readWorld(ctx context.Context, now time.Time) (*world, error) {
	w := &world{users: map[int64]bool{}, groups: map[int64]bool{}, projects: map[string]int{}, roles: map[int64]role{}, now: now}
	for _, step := range []func(context.Context, *world) error{
		r.readRoles, r.readUsers, r.readGroups, r.readProjects, r.readProjectRoles, r.readFavorites,
		r.readFeatures, r.readTokens, r.readPATs,
	} {
		if err := step(ctx, w); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (r *reader) readRoles(ctx context.Context, w *world) error {
	return r.each(ctx, `SELECT id, name, type FROM roles`, func(rows pgx.Rows) error {
		var id int64
		var ro role
		if err := rows.Scan(&id, &ro.name, &ro.typ); err != nil {
			return err
		}
		w.roles[id] = ro
		return nil
	})
}

func (r *reader) readUsers(ctx context.Context, w *world) error {
	root, err := r.readRootRoles(ctx, w)
	if err != nil {
		return err
	}
	c := r.sum.kind("users")
	sa := r.sum.kind("service accounts")
	q := fmt.Sprintf(`SELECT id, coalesce(name, ''), coalesce(username, ''), coalesce(email, ''), %s, %s, %s FROM users ORDER BY id`,
		r.col("users", "is_service", "coalesce(is_service, false)", "false"),
		r.col("users", "is_system", "is_system", "id < 0"),
		r.col("users", "deleted_at", "deleted_at IS NOT NULL", "false"))
	err = r.each(ctx, q, func(rows pgx.Rows) error {
		var u flagadmin.User
		var system, deleted bool
		if err := rows.Scan(&u.ID, &u.Name, &u.Username, &u.Email, &u.IsService, &system, &deleted); err != nil {
			return err
		}
		k := c
		if u.IsService {
			k = sa
		}
		k.Read++
		if why := userSkipped(u, system, deleted); why != "" {
			k.skip(why)
			return nil
		}
		name, found := root[u.ID]
		var why string
		u.RootRole, why = rootRole(name, found)
		if why != "" {
			k.mapDown(why)
		}
		k.Imported++
		w.users[u.ID] = true
		w.batch.Users = append(w.batch.Users, u)
		return nil
	})
	if err != nil {
		return err
	}
	r.prog.table("users", c.Read+sa.Read)
	return nil
}

// readRootRoles returns each user's root role: of its role_user rows
// whose role is a root role, the highest.
func (r *reader) readRootRoles(ctx context.Context, w *world) (map[int64]string, error) {
	root := map[int64]string{}
	err := r.each(ctx, `SELECT user_id, role_id FROM role_user ORDER BY user_id, role_id`, func(rows pgx.Rows) error {
		var uid, rid int64
		if err := rows.Scan(&uid, &rid); err != nil {
			return err
		}
		if ro, ok := w.roles[rid]; ok && isRootRoleType(ro.typ) {
			if have, ok := root[uid]; !ok || rootRank(ro.name) > rootRank(have) {
				root[uid] = ro.name
			}
		}
		return nil
	})
	return root, err
}

// userSkipped is why a user is not imported, "" when it is.
func userSkipped(u flagadmin.User, system, deleted bool) string {
	switch {
	case system || u.ID <= 0:
		return "system users (Unleash's own actors; their events keep their ids)"
	case deleted:
		return "deleted"
	case u.Name == "" && u.Username == "" && u.Email == "":
		return "no name, username or email"
	}
	return ""
}

func (r *reader) readGroups(ctx context.Context, w *world) error {
	if !r.src.Has("groups", "") {
		return nil
	}
	c := r.sum.kind("groups")
	at := map[int64]int{}
	q := fmt.Sprintf(`SELECT id, name, %s FROM groups ORDER BY id`, r.col("groups", "root_role_id", "root_role_id IS NOT NULL", "false"))
	err := r.each(ctx, q, func(rows pgx.Rows) error {
		var g flagadmin.Group
		var hasRoot bool
		if err := rows.Scan(&g.ID, &g.Name, &hasRoot); err != nil {
			return err
		}
		c.Read++
		if g.ID <= 0 || g.Name == "" {
			c.skip("no name or id")
			return nil
		}
		if hasRoot {
			c.mapDown("group root role not kept (flagadmin groups hold project roles only)")
		}
		c.Imported++
		w.groups[g.ID] = true
		at[g.ID] = len(w.batch.Groups)
		w.batch.Groups = append(w.batch.Groups, g)
		return nil
	})
	if err != nil || !r.src.Has("group_user", "") {
		return err
	}
	m := r.sum.kind("group members")
	err = r.each(ctx, `SELECT group_id, user_id FROM group_user ORDER BY group_id, user_id`, func(rows pgx.Rows) error {
		var gid, uid int64
		if err := rows.Scan(&gid, &uid); err != nil {
			return err
		}
		m.Read++
		i, ok := at[gid]
		switch {
		case !ok:
			m.skip("group not imported")
		case !w.users[uid]:
			m.skip("user not imported (deleted or system)")
		default:
			m.Imported++
			w.batch.Groups[i].Users = append(w.batch.Groups[i].Users, uid)
		}
		return nil
	})
	r.prog.table("groups", c.Read+m.Read)
	return err
}

func (r *reader) readProjects(ctx context.Context, w *world) error {
	c := r.sum.kind("projects")
	q := fmt.Sprintf(`SELECT p.id, coalesce(p.name, ''), coalesce(p.description, ''), p.created_at, %s, %s FROM projects p %s ORDER BY p.id`,
		r.col("projects", "archived_at", "p.archived_at", "NULL::timestamptz"),
		r.col("project_settings", "project_mode", "ps.project_mode", "NULL::text"),
		r.col("project_settings", "project_mode", "LEFT JOIN project_settings ps ON ps.project = p.id", ""))
	err := r.each(ctx, q, func(rows pgx.Rows) error {
		var p flagadmin.Project
		var created *time.Time
		var mode *string
		if err := rows.Scan(&p.ID, &p.Name, &p.Description, &created, &p.ArchivedAt, &mode); err != nil {
			return err
		}
		c.Read++
		if !flagadmin.ValidName(p.ID) {
			c.skip("id not 1 to 100 letters, digits, or _ . ~ -")
			return nil
		}
		if p.Name == "" {
			p.Name = p.ID
		}
		var why string
		p.Mode, why = projectMode(mode)
		if why != "" {
			c.mapDown(why)
		}
		if created == nil {
			c.mapDown("no creation time: the import's time")
			created = &w.now
		}
		p.CreatedAt = flagadmin.Truncate(*created)
		if p.ArchivedAt != nil {
			t := flagadmin.Truncate(*p.ArchivedAt)
			p.ArchivedAt = &t
		}
		c.Imported++
		w.projects[p.ID] = len(w.batch.Projects)
		w.batch.Projects = append(w.batch.Projects, p)
		return nil
	})
	r.prog.table("projects", c.Read)
	return err
}

// readProjectRoles reads the project roles of users (role_user rows whose
// role is not a root role) and of groups (group_role).
func (r *reader) readProjectRoles(ctx context.Context, w *world) error {
	c := r.sum.kind("project roles")
	grant := func(project string, rid int64, m flagadmin.ProjectMembership, member bool) {
		c.Read++
		ro := w.roles[rid]
		i, ok := w.projects[project]
		switch {
		case !ok:
			c.skip("project not imported")
			return
		case !member:
			c.skip("user or group not imported (deleted or system)")
			return
		}
		var why string
		m.Role, why = projectRole(ro.name)
		if why != "" {
			c.mapDown(why)
		}
		c.Imported++
		w.batch.Projects[i].Members = append(w.batch.Projects[i].Members, m)
	}
	err := r.each(ctx, `SELECT user_id, role_id, project FROM role_user ORDER BY project, user_id, role_id`, func(rows pgx.Rows) error {
		var uid, rid int64
		var project string
		if err := rows.Scan(&uid, &rid, &project); err != nil {
			return err
		}
		if ro, ok := w.roles[rid]; !ok || isRootRoleType(ro.typ) {
			return nil
		}
		grant(project, rid, flagadmin.ProjectMembership{UserID: &uid}, w.users[uid])
		return nil
	})
	if err != nil {
		return err
	}
	if r.src.Has("group_role", "project") {
		err = r.each(ctx, `SELECT group_id, role_id, project FROM group_role ORDER BY project, group_id, role_id`, func(rows pgx.Rows) error {
			var gid, rid int64
			var project string
			if err := rows.Scan(&gid, &rid, &project); err != nil {
				return err
			}
			grant(project, rid, flagadmin.ProjectMembership{GroupID: &gid}, w.groups[gid])
			return nil
		})
	}
	r.prog.table("project roles", c.Read)
	return err
}

func (r *reader) readFavorites(ctx context.Context, w *world) error {
	if r.src.Has("favorite_projects", "") {
		c := r.sum.kind("favorite projects")
		err := r.each(ctx, `SELECT project, user_id FROM favorite_projects ORDER BY project, user_id`, func(rows pgx.Rows) error {
			var project string
			var uid int64
			if err := rows.Scan(&project, &uid); err != nil {
				return err
			}
			c.Read++
			i, ok := w.projects[project]
			switch {
			case !ok:
				c.skip("project not imported")
			case !w.users[uid]:
				c.skip("user not imported (deleted or system)")
			default:
				c.Imported++
				w.batch.Projects[i].FavoritedBy = append(w.batch.Projects[i].FavoritedBy, uid)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if r.src.Has("favorite_features", "") {
		c := r.sum.kind("favorite flags")
		err := r.each(ctx, `SELECT count(*) FROM favorite_features`, func(rows pgx.Rows) error {
			var n int
			if err := rows.Scan(&n); err != nil {
				return err
			}
			c.Read = n
			if n > 0 {
				c.Skipped["flagadmin keeps favorite projects, not favorite flags"] = n
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// The columns the flags are mapped from, by table: read by readFeatures,
// and fingerprinted by featuresKey.
const (
	featureColumns = `name, coalesce(project, ''), coalesce(type, 'release'), coalesce(stale, false), created_at, archived_at, last_seen_at`
	tagColumns     = `feature_name, tag_type, tag_value`
	// lastSeenColumns: Unleash 5.7 and later keep when SDKs last reported
	// a flag in last_seen_at_metrics, one row per environment, and no
	// longer in features.last_seen_at; Unleash's project list takes the
	// newest of a project's rows (its lastReportedFlagUsage).
	lastSeenColumns = `feature_name, last_seen_at`
)

// hasLastSeenMetrics reports whether the source keeps flags' last seen
// times in last_seen_at_metrics.
func (r *reader) hasLastSeenMetrics() bool {
	return r.src.Has("last_seen_at_metrics", "feature_name") && r.src.Has("last_seen_at_metrics", "last_seen_at")
}

func (r *reader) lifecycleColumns() string {
	return fmt.Sprintf(`feature, stage, %s, %s, created_at`,
		r.col("feature_lifecycles", "status", "coalesce(status, '')", "''"),
		r.col("feature_lifecycles", "status_value", "coalesce(status_value, '')", "''"))
}

// featuresKey fingerprints, in r's snapshot, what the flags are mapped
// from: the projects read (w.projects: a flag of a project not imported is
// skipped) and, for each table the flags are read from, the count and the
// sum of a 64-bit hash of each row's columns that are read. Reading and
// mapping 20,000 flags takes a follower about a second of CPU; this
// statement takes PostgreSQL a few milliseconds, so a follower reads the
// flags again only when one of those rows changed.
func (r *reader) featuresKey(ctx context.Context, w *world) (string, error) {
	sum := func(columns, table string) string {
		return fmt.Sprintf(`(SELECT count(*) || '/' || coalesce(sum(hashtextextended(t::text, 0)), 0) FROM (SELECT %s FROM %s) t)`, columns, table)
	}
	parts := []string{sum(featureColumns, "features")}
	if r.src.Has("feature_tag", "") {
		parts = append(parts, sum(tagColumns, "feature_tag"))
	}
	if r.src.Has("feature_lifecycles", "") {
		parts = append(parts, sum(r.lifecycleColumns(), "feature_lifecycles"))
	}
	if r.hasLastSeenMetrics() {
		parts = append(parts, sum(lastSeenColumns, "last_seen_at_metrics"))
	}
	var key string
	if err := r.tx.QueryRow(ctx, `SELECT `+strings.Join(parts, ` || ' ' || `)).Scan(&key); err != nil {
		return "", sourceFailure(err)
	}
	projects := slices.Sorted(maps.Keys(w.projects))
	return key + " " + strings.Join(projects, ","), nil
}

func (r *reader) readFeatures(ctx context.Context, w *world) error {
	if r.keyFeatures {
		key, err := r.featuresKey(ctx, w)
		if err != nil {
			return err
		}
		w.featuresKey = key
		if r.reuse != nil && r.reuse.featuresKey == key {
			w.reused = r.reuse.features
			return nil
		}
	}
	fr := &featureRows{tc: r.sum.kind("flag tags"), lc: r.sum.kind("lifecycle rows")}
	fr.c = r.sum.kind("flags") // after its tags and lifecycle rows, as the summary lists them
	for _, read := range []func(context.Context) error{fr.readTags(r), fr.readLifecycles(r), fr.readLastSeen(r)} {
		if err := read(ctx); err != nil {
			return err
		}
	}
	err := r.each(ctx, `SELECT `+featureColumns+` FROM features ORDER BY name`, func(rows pgx.Rows) error {
		var f flagadmin.Feature
		var typ string
		var created *time.Time
		if err := rows.Scan(&f.Name, &f.Project, &typ, &f.Stale, &created, &f.ArchivedAt, &f.LastSeenAt); err != nil {
			return err
		}
		fr.add(w, f, typ, created)
		return nil
	})
	if err != nil {
		return err
	}
	fr.countNotImported(w)
	r.prog.table("flags", fr.c.Read+fr.tc.Read+fr.lc.Read)
	return nil
}

// featureRows are the rows a flag is mapped from besides its own, by flag
// name, and the counts of each kind.
type featureRows struct {
	tags     map[string][]flagadmin.Tag
	stages   map[string][]lifecycleRow
	lastSeen map[string]time.Time
	// c, tc, lc count the flags, their tags and their lifecycle rows.
	c, tc, lc *Count
}

// readTags reads the flags' tags (feature_tag), when the schema has them.
func (fr *featureRows) readTags(r *reader) func(context.Context) error {
	return func(ctx context.Context) error {
		fr.tags = map[string][]flagadmin.Tag{}
		if !r.src.Has("feature_tag", "") {
			return nil
		}
		return r.each(ctx, `SELECT `+tagColumns+` FROM feature_tag ORDER BY feature_name, tag_type, tag_value`, func(rows pgx.Rows) error {
			var name string
			var t flagadmin.Tag
			if err := rows.Scan(&name, &t.Type, &t.Value); err != nil {
				return err
			}
			fr.tc.Read++
			if t.Validate() != nil {
				fr.tc.skip("type or value outside 2 to 50 characters")
				return nil
			}
			fr.tags[name] = append(fr.tags[name], t)
			return nil
		})
	}
}

// readLifecycles reads the flags' lifecycle rows (feature_lifecycles),
// when the schema has them.
func (fr *featureRows) readLifecycles(r *reader) func(context.Context) error {
	return func(ctx context.Context) error {
		fr.stages = map[string][]lifecycleRow{}
		if !r.src.Has("feature_lifecycles", "") {
			return nil
		}
		q := `SELECT ` + r.lifecycleColumns() + ` FROM feature_lifecycles ORDER BY feature, created_at, stage`
		return r.each(ctx, q, func(rows pgx.Rows) error {
			var name string
			var l lifecycleRow
			var at *time.Time
			if err := rows.Scan(&name, &l.stage, &l.status, &l.statusValue, &at); err != nil {
				return err
			}
			if at != nil {
				l.at = *at
			}
			fr.lc.Read++
			fr.stages[name] = append(fr.stages[name], l)
			return nil
		})
	}
}

// readLastSeen reads the newest last seen time of each flag in
// last_seen_at_metrics, when the schema keeps them there.
func (fr *featureRows) readLastSeen(r *reader) func(context.Context) error {
	return func(ctx context.Context) error {
		fr.lastSeen = map[string]time.Time{}
		if !r.hasLastSeenMetrics() {
			return nil
		}
		q := `SELECT feature_name, max(last_seen_at) FROM last_seen_at_metrics WHERE last_seen_at IS NOT NULL GROUP BY feature_name`
		return r.each(ctx, q, func(rows pgx.Rows) error {
			var name string
			var at time.Time
			if err := rows.Scan(&name, &at); err != nil {
				return err
			}
			fr.lastSeen[name] = at
			return nil
		})
	}
}

// add maps a row of features (f as read, its type typ and creation time
// created) with its tags, lifecycle and last seen time, and adds it to w
// unless it is skipped.
func (fr *featureRows) add(w *world, f flagadmin.Feature, typ string, created *time.Time) {
	c := fr.c
	c.Read++
	if _, ok := w.projects[f.Project]; !ok {
		c.skip("project does not exist or was not imported")
		return
	}
	if !flagadmin.ValidName(f.Name) {
		c.skip("name not 1 to 100 letters, digits, or _ . ~ -")
		return
	}
	var why string
	if f.Type, why = featureType(typ); why != "" {
		c.mapDown(why)
	}
	if created == nil {
		c.mapDown("no creation time: the import's time")
		created = &w.now
	}
	f.CreatedAt = flagadmin.Truncate(*created)
	if at, ok := fr.lastSeen[f.Name]; ok && (f.LastSeenAt == nil || at.After(*f.LastSeenAt)) {
		f.LastSeenAt = &at // the newest report, in either place
	}
	for _, p := range []**time.Time{&f.ArchivedAt, &f.LastSeenAt} {
		if *p != nil {
			t := flagadmin.Truncate(**p)
			*p = &t
		}
	}
	f.Tags = fr.tags[f.Name]
	fr.tc.Imported += len(f.Tags)
	var notes []string
	f.Lifecycle, notes = currentStage(fr.stages[f.Name], f.ArchivedAt != nil)
	fr.lc.Imported += len(fr.stages[f.Name])
	for _, n := range notes {
		c.mapDown(n)
	}
	c.Imported++
	w.batch.Features = append(w.batch.Features, f)
}

// countNotImported counts as skipped the tags and lifecycle rows of flags
// not imported. Lifecycle rows are folded into one stage per flag:
// "imported" counts the rows read for imported flags.
func (fr *featureRows) countNotImported(w *world) {
	imported := make(map[string]bool, len(w.batch.Features))
	for _, f := range w.batch.Features {
		imported[f.Name] = true
	}
	for name, ts := range fr.tags {
		if !imported[name] {
			fr.tc.Skipped["flag not imported"] += len(ts)
		}
	}
	for name, ls := range fr.stages {
		if !imported[name] {
			fr.lc.Skipped["flag not imported"] += len(ls)
		}
	}
}

func (r *reader) readTokens(ctx context.Context, w *world) error {
	projects, err := r.readTokenProjects(ctx)
	if err != nil {
		return err
	}
	c := r.sum.kind("API tokens")
	q := fmt.Sprintf(`SELECT secret, %s, type, coalesce(environment, ''), expires_at, created_at FROM api_tokens ORDER BY created_at, secret`,
		r.col("api_tokens", "token_name", "coalesce(token_name, username)", "username"))
	err = r.each(ctx, q, func(rows pgx.Rows) error {
		var secret, typ string
		var t flagadmin.APIToken
		var created *time.Time
		if err := rows.Scan(&secret, &t.Name, &typ, &t.Environment, &t.ExpiresAt, &created); err != nil {
			return err
		}
		c.Read++
		if mapToken(&t, secret, typ, projects[secret], c) {
			w.addToken(t, secret, created)
			c.Imported++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := r.readHashedTokens(ctx, c); err != nil {
		return err
	}
	r.prog.table("API tokens", c.Read)
	return nil
}

// readTokenProjects returns the projects of each token's secret
// (api_token_project), when the schema has them.
func (r *reader) readTokenProjects(ctx context.Context) (map[string][]string, error) {
	projects := map[string][]string{}
	if !r.src.Has("api_token_project", "") {
		return projects, nil
	}
	err := r.each(ctx, `SELECT secret, project FROM api_token_project ORDER BY secret, project`, func(rows pgx.Rows) error {
		var secret, project string
		if err := rows.Scan(&secret, &project); err != nil {
			return err
		}
		projects[secret] = append(projects[secret], project)
		return nil
	})
	return projects, err
}

// mapToken completes t, of secret, of Unleash's type typ and projects;
// false (counted in c) when it is skipped.
func mapToken(t *flagadmin.APIToken, secret, typ string, projects []string, c *Count) bool {
	var ok bool
	if t.Type, ok = tokenType(typ); !ok {
		c.skip(fmt.Sprintf("type %q unknown to flagadmin", typ))
		return false
	}
	shape, ok := flagadmin.TokenShape(secret)
	if !ok || shape == flagadmin.TokenUser || (shape == flagadmin.TokenAdmin) != (t.Type == flagadmin.TokenAdmin) {
		c.skip("secret not of the shape flagadmin recognises for its type")
		return false
	}
	if t.Type == flagadmin.TokenAdmin {
		t.Environment = ""
		return true
	}
	var why string
	if t.Project, why = tokenScope(projects); why != "" {
		c.mapDown(why)
	}
	if t.Environment == "" {
		t.Environment = "*"
	}
	return true
}

// readHashedTokens counts the tokens Unleash keeps only as a hash
// (api_tokens_v2), when the schema has them: not importable.
func (r *reader) readHashedTokens(ctx context.Context, c *Count) error {
	if !r.src.Has("api_tokens_v2", "") {
		return nil
	}
	return r.each(ctx, `SELECT coalesce(token_name, ''), coalesce(type, '') FROM api_tokens_v2 ORDER BY created_at`, func(rows pgx.Rows) error {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return err
		}
		c.Read++
		c.skip("stored only as a hash by Unleash (api_tokens_v2): not importable")
		r.sum.NotImportable = append(r.sum.NotImportable, fmt.Sprintf("API token %q (%s): Unleash stored only its hash; create a new token", name, typ))
		return nil
	})
}

// addToken adds t, whose secret is secret, with its hash.
func (w *world) addToken(t flagadmin.APIToken, secret string, created *time.Time) {
	t.SecretHash = flagadmin.HashSecret(secret)
	if created == nil {
		created = &w.now
	}
	t.CreatedAt = flagadmin.Truncate(*created)
	if t.ExpiresAt != nil {
		e := flagadmin.Truncate(*t.ExpiresAt)
		t.ExpiresAt = &e
	}
	if t.Name == "" {
		t.Name = string(t.Type)
	}
	w.batch.Tokens = append(w.batch.Tokens, t)
	w.secrets = append(w.secrets, secret)
}

func (r *reader) readPATs(ctx context.Context, w *world) error {
	if !r.src.Has("personal_access_tokens", "") {
		return nil
	}
	c := r.sum.kind("personal access tokens")
	q := fmt.Sprintf(`SELECT %s, secret, coalesce(description, ''), user_id, expires_at, created_at,
		(SELECT coalesce(u.email, u.username, u.name, '') FROM users u WHERE u.id = t.user_id)
		FROM personal_access_tokens t ORDER BY 1`, r.col("personal_access_tokens", "id", "t.id", "0"))
	err := r.each(ctx, q, func(rows pgx.Rows) error {
		var id, uid int64
		var secret *string
		var t flagadmin.APIToken
		var created *time.Time
		var owner *string
		if err := rows.Scan(&id, &secret, &t.Name, &uid, &t.ExpiresAt, &created, &owner); err != nil {
			return err
		}
		c.Read++
		who := ""
		if owner != nil {
			who = *owner
		}
		switch {
		case secret == nil || *secret == "":
			c.skip("stored only as a hash by Unleash: not importable")
			r.sum.NotImportable = append(r.sum.NotImportable,
				fmt.Sprintf("personal access token %d of %s (%q): Unleash stored only its hash; create a new one", id, strings.TrimSpace(who), t.Name))
			return nil
		case !w.users[uid]:
			c.skip("owner not imported (deleted or system)")
			return nil
		}
		if shape, ok := flagadmin.TokenShape(*secret); !ok || shape != flagadmin.TokenUser {
			c.skip("secret not of the shape user:<secret>")
			return nil
		}
		t.Type, t.UserID = flagadmin.TokenUser, &uid
		if t.Name == "" {
			t.Name = "personal access token"
		}
		w.addToken(t, *secret, created)
		c.Imported++
		return nil
	})
	r.prog.table("personal access tokens", c.Read)
	return err
}

// defaultEventBatch is how many events are read and written at a time.
const defaultEventBatch = 5000

// eventMode says which events readEvents reads and how.
type eventMode struct {
	// forSeed: events a seed file cannot hold are skipped (counted).
	forSeed bool
	// upTo, when positive, reads only the events whose id is at most upTo
	// (a follow's import stops below the first id it cannot settle).
	upTo int64
}

// unleashEventColumns are the columns of Unleash's events table the
// import and the follower read (readColumns): those eventColumns selects.
var unleashEventColumns = []string{"id", "created_at", "type", "created_by", "created_by_user_id", "environment", "project", "feature_name",
	"data", "pre_data", "tags", "group_type", "group_id"}

// eventColumns is the select list of an events query, in the order
// scanEvent reads it.
func (r *reader) eventColumns() string {
	return fmt.Sprintf(`id, created_at, type, coalesce(created_by, ''), %s, environment, project, feature_name,
		data::text, pre_data::text, tags::text, %s, %s`,
		r.col("events", "created_by_user_id", "created_by_user_id", "NULL::int"),
		r.col("events", "group_type", "group_type::text", "NULL::text"),
		r.col("events", "group_id", "group_id::text", "NULL::text"))
}

// scanEvent reads a row of eventColumns and maps it; ok is false when the
// event is skipped (counted in c).
func scanEvent(rows pgx.Rows, mode eventMode, c *Count) (e flagadmin.Event, ok bool, err error) {
	var at *time.Time
	var uid *int32
	var data, pre, tags *string
	if err := rows.Scan(&e.ID, &at, &e.Type, &e.CreatedBy, &uid, &e.Environment, &e.Project, &e.FeatureName, &data, &pre, &tags, &e.GroupType, &e.GroupID); err != nil {
		return e, false, err
	}
	c.Read++
	return e, mapEvent(&e, at, uid, data, pre, tags, mode, c), nil
}

// readEvents streams the events, id ascending, mapped, in batches to emit.
func (r *reader) readEvents(ctx context.Context, mode eventMode, emit func([]flagadmin.Event) error) error {
	c := r.sum.kind("events")
	where := ""
	if mode.upTo > 0 {
		where = fmt.Sprintf(" WHERE id <= %d", mode.upTo)
	}
	var total int
	if err := r.tx.QueryRow(ctx, `SELECT count(*) FROM events`+where).Scan(&total); err != nil {
		return sourceFailure(err)
	}
	r.prog.startEvents(total)
	q := `SELECT ` + r.eventColumns() + ` FROM events` + where + ` ORDER BY id`
	batch := make([]flagadmin.Event, 0, r.batchSize)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := emit(batch); err != nil {
			return err
		}
		c.Imported += len(batch)
		r.prog.events(c.Read)
		batch = batch[:0]
		return nil
	}
	err := r.each(ctx, q, func(rows pgx.Rows) error {
		e, ok, err := scanEvent(rows, mode, c)
		if err != nil || !ok {
			return err
		}
		batch = append(batch, e)
		if len(batch) == r.batchSize {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	r.prog.doneEvents(c.Read)
	return nil
}

// mapEvent completes e from its raw columns; false when it is skipped.
func mapEvent(e *flagadmin.Event, at *time.Time, uid *int32, data, pre, tags *string, mode eventMode, c *Count) bool {
	if at == nil {
		c.skip("no creation time")
		return false
	}
	if !flagadmin.IsKnownEventType(e.Type) {
		if mode.forSeed {
			c.skip("type unknown to flagadmin (a seed file holds known types only)")
			return false
		}
		c.mapDown("type unknown to flagadmin: kept as it is")
	}
	e.CreatedAt = flagadmin.Truncate(*at)
	if e.CreatedBy == "" {
		e.CreatedBy = "unknown"
		c.mapDown(`empty createdBy: "unknown"`)
	}
	if uid != nil {
		v := int64(*uid)
		e.CreatedByUserID = &v
	}
	var why string
	if e.Data, why = eventJSON(bytesOf(data)); why != "" {
		c.mapDown("data " + why)
	}
	if e.PreData, why = eventJSON(bytesOf(pre)); why != "" {
		c.mapDown("preData " + why)
	}
	var notes []string
	e.Tags, notes, _ = eventTags(bytesOf(tags))
	for _, n := range notes {
		c.mapDown(n)
	}
	// Into the log's normal form (I-JSON), as every event is written: a
	// number beyond the range of a double becomes the string of its text,
	// so that Unleash's event is kept.
	normal, err := flagadmin.NormalizeEvent(e, flagadmin.OutOfRangeAsString)
	if err != nil {
		c.skip("data or preData that flagadmin cannot hold (nested too deep)")
		return false
	}
	for _, n := range normal {
		c.mapDown(n)
	}
	return true
}

func bytesOf(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}
