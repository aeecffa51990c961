package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
)

var (
	_ follow.Target              = (*Store)(nil)
	_ flagadmin.ReadOnlyReporter = (*Store)(nil)
)

// Following a live Unleash (follow.Target). The
// follow state is the one row of follow_state (schema/*.sql):
// the source's identity, the position, the holes, the synced time and the
// follow lease. Times are Unix milliseconds of the callers' clocks.
//
// The lease is taken, renewed and released by one conditional UPDATE each
// (lease.go), as webhook sinks' leases are. A fenced write (LoadFollow,
// ApplyFollow) checks the lease inside its own transaction and holds the
// row's lock from there to its commit (ApplyFollow from its first
// statement, LoadFollow from its last, so that renewals go on during a long
// load): a server taking over waits for the commit, and a batch of a server
// that lost the lease is rolled back whole.
//
// A batch's rows are written through record (record.go) like every write:
// the summaries, the version and the events, which keep their Unleash ids
// (given ids, checked above every stored one under the event order lock).
// Deletes come before upserts, so that a row referring to one the batch
// deletes breaks a foreign key (ErrConflict) instead of going with it. The
// project list's figures of the projects a batch touches are computed
// again from the tables (a batch carries rows, not their changes); a Full
// batch rebuilds them all.
//
// The store is read-only while it follows: the Service refuses its write
// operations, reading ReadOnly (flagadmin.ReadOnlyReporter), as over
// memstore.

// followRow is the row of follow_state.
type followRow struct {
	bun.BaseModel `bun:"table:follow_state"`

	ID         int64  `bun:"id,pk"`
	SystemID   string `bun:"source_system_id"`
	Database   string `bun:"source_database"`
	URL        string `bun:"source_url"`
	Position   int64  `bun:"event_position"`
	Holes      int64  `bun:"holes"`
	SyncedAt   int64  `bun:"synced_at"`
	Holder     string `bun:"holder"`
	LeaseUntil int64  `bun:"lease_until"`
	Seq        int64  `bun:"seq"`
}

func (r followRow) state() follow.State {
	return follow.State{
		Source:   follow.Source{SystemID: r.SystemID, Database: r.Database, URL: r.URL},
		Position: r.Position, Holes: r.Holes, SyncedAt: fromMillis(r.SyncedAt),
		Lease: flagadmin.Lease{Holder: r.Holder, Until: fromMillis(r.LeaseUntil)},
	}
}

// followRowOf reads the row of follow_state on db.
func followRowOf(ctx context.Context, db bun.IDB) (followRow, error) {
	var r followRow
	err := db.NewSelect().Model(&r).Where("id = 1").Scan(ctx)
	return r, err
}

// FollowState implements follow.StateReader. A database without
// the schema yet (a store opened WithoutMigrate) follows nothing.
func (s *Store) FollowState(ctx context.Context) (follow.State, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	r, err := followRowOf(ctx, s.rdb)
	if err != nil {
		if exists, existsErr := tableExists(ctx, s.sqlDialect, s.rdb, "follow_state"); existsErr == nil && !exists {
			return follow.State{}, nil
		}
		return follow.State{}, s.fail("read follow state", err)
	}
	return r.state(), nil
}

// ReadOnly implements flagadmin.ReadOnlyReporter: the store is a read-only
// copy while it follows an Unleash database.
func (s *Store) ReadOnly(ctx context.Context) (source string, readOnly bool, err error) {
	return follow.ReadOnly(ctx, s)
}

// AcquireFollowLease implements follow.Target.
func (s *Store) AcquireFollowLease(ctx context.Context, holder string, now, until time.Time) (follow.State, bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	held, err := followLease.acquire(ctx, s.db, holder, now, until)
	if err != nil {
		return follow.State{}, false, s.fail("acquire follow lease", err)
	}
	r, err := followRowOf(ctx, s.db)
	if err != nil {
		return follow.State{}, false, s.fail("acquire follow lease", err)
	}
	return r.state(), held, nil
}

// ReleaseFollowLease implements follow.Target.
func (s *Store) ReleaseFollowLease(ctx context.Context, holder string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.fail("release follow lease", followLease.release(ctx, s.db, holder))
}

// LoadFollow implements follow.Target: Load, with the lease
// checked at its start and the follow state recorded at its end, fenced by
// the lease again (another server may have taken it over while a long load
// ran), all in Load's one transaction.
func (s *Store) LoadFollow(ctx context.Context, holder string, now time.Time, st follow.State, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error {
	return s.loadAll(ctx, b, events, func(ctx context.Context, tx bun.Tx, loaded bool) error {
		if !loaded {
			r, err := followRowOf(ctx, tx)
			switch {
			case err != nil:
				return err
			case !r.state().Lease.HeldBy(holder, now):
				return &callbackError{follow.ErrLeaseLost}
			case !r.state().Source.IsZero():
				return &callbackError{fmt.Errorf("%w: the store already follows the Unleash database %s", flagadmin.ErrConflict, r.URL)}
			}
			return nil
		}
		ok, err := followLease.whileNamed(ctx, tx, `source_system_id = ?, source_database = ?, source_url = ?,
			event_position = ?, holes = ?, synced_at = ?`,
			[]any{st.Source.SystemID, st.Source.Database, st.Source.URL, st.Position, st.Holes, millisOrZero(st.SyncedAt)}, holder)
		return leaseHeld(ok, err)
	})
}

// leaseHeld is nil when a fenced UPDATE of follow_state matched its row
// (ok), else err or follow.ErrLeaseLost.
func leaseHeld(ok bool, err error) error {
	switch {
	case err != nil:
		return err
	case !ok:
		return &callbackError{follow.ErrLeaseLost}
	}
	return nil
}

// millisOrZero is t in Unix milliseconds, 0 for the zero time.
func millisOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// ApplyFollow implements follow.Target in one transaction: the
// fence and the checks, then the rows and the new position, then record
// (the summaries, the version, the events). A batch that changes nothing a
// read answers (the position and the synced time only) is the fence, the
// checks and the follow state alone: no version, no summaries. The
// events of a batch of a follower catching up go into the full-text
// index's backlog where the database keeps one (deferText).
func (s *Store) ApplyFollow(ctx context.Context, holder string, now time.Time, b *follow.Batch) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if !b.Changes() {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return s.fail("apply follow", err)
		}
		defer conn.Close()
		err = conn.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if err := fenceFollow(ctx, tx, holder, now, b); err != nil {
				return err
			}
			return setFollowPosition(ctx, tx, b)
		})
		return s.fail("apply follow", err)
	}
	deferred := false // the batch left its texts to the backlog
	err := s.inTx(ctx, "apply follow", func(ctx context.Context, t *txn) (*changes, error) {
		if err := fenceFollow(ctx, t, holder, now, b); err != nil {
			return nil, err
		}
		ch, err := applyFollowRows(ctx, s.sqlDialect, t, b)
		if err != nil {
			return nil, err
		}
		if err := setFollowPosition(ctx, t, b); err != nil {
			return nil, err
		}
		deferred, err = s.deferText(ctx, t, b.Events)
		ch.textLater, ch.textBacklog, ch.tokensLater = deferred, deferred, deferred
		return ch, err
	})
	if err == nil && deferred {
		s.deferred()
	}
	return err
}

// fenceFollow checks, in the transaction db, that holder holds the lease at
// now (and locks the row of follow_state to the commit), that the store
// follows a source, and that b goes on from its position.
func fenceFollow(ctx context.Context, db bun.IDB, holder string, now time.Time, b *follow.Batch) error {
	if err := leaseHeld(followLease.whileHeld(ctx, db, "", nil, "", holder, now)); err != nil {
		return err
	}
	r, err := followRowOf(ctx, db)
	if err != nil {
		return err
	}
	conflict := func(format string, args ...any) error {
		return &callbackError{fmt.Errorf("%w: "+format, append([]any{flagadmin.ErrConflict}, args...)...)}
	}
	switch {
	case r.state().Source.IsZero():
		return conflict("the store follows no Unleash database")
	case b.Position < r.Position:
		return conflict("position %d is below the current one (%d)", b.Position, r.Position)
	case b.Holes < r.Holes:
		return conflict("holes %d are fewer than the current count (%d)", b.Holes, r.Holes)
	}
	last := r.Position
	for _, e := range b.Events {
		if e.ID <= last || e.ID > b.Position {
			return conflict("event id %d is not above %d and at most the position %d", e.ID, last, b.Position)
		}
		last = e.ID
	}
	return nil
}

// setFollowPosition records b's position, holes and synced time.
func setFollowPosition(ctx context.Context, db bun.IDB, b *follow.Batch) error {
	q := db.NewUpdate().Model((*followRow)(nil)).Set("event_position = ?", b.Position).Set("holes = ?", b.Holes).Where("id = 1")
	if !b.SyncedAt.IsZero() {
		q = q.Set("synced_at = ?", b.SyncedAt.UnixMilli())
	}
	_, err := q.Exec(ctx)
	return err
}

// applyFollowRows writes b's deletes, then its upserts, in the transaction
// t, and returns what changed for record: b's events with their ids, and
// the projects whose figures to compute again.
func applyFollowRows(ctx context.Context, d sqlDialect, t *txn, b *follow.Batch) (*changes, error) {
	ch := &changes{events: slices.Clone(b.Events), givenIDs: true, bulk: len(b.Events) >= bulkFollowEvents}
	del := followDeletes{users: b.DeleteUsers, groups: b.DeleteGroups, projects: b.DeleteProjects, features: b.DeleteFeatures, tokens: b.DeleteTokens}
	if b.Full {
		if err := del.allBut(ctx, t, b); err != nil {
			return nil, err
		}
		ch.refigureAll = true
	} else {
		projects, err := touchedProjects(ctx, t, b)
		if err != nil {
			return nil, err
		}
		ch.refigured = projects
	}
	if err := del.apply(ctx, t); err != nil {
		return nil, err
	}
	if err := upsertFollowRows(ctx, d, t, b); err != nil {
		return nil, err
	}
	return ch, nil
}

// bulkFollowEvents is how many events of a batch make it a bulk write
// (COPY on PostgreSQL).
const bulkFollowEvents = 64

// followDeletes are the keys a follow batch deletes.
type followDeletes struct {
	users, groups      []int64
	projects, features []string
	tokens             []string
}

// allBut sets the deletes of a Full batch: every stored key b does not list.
func (d *followDeletes) allBut(ctx context.Context, db bun.IDB, b *follow.Batch) error {
	var err error
	if d.users, err = missingKeys(ctx, db, "SELECT id FROM users", keysOf(b.Users, func(u flagadmin.User) int64 { return u.ID })); err != nil {
		return err
	}
	if d.groups, err = missingKeys(ctx, db, "SELECT id FROM user_groups", keysOf(b.Groups, func(g flagadmin.Group) int64 { return g.ID })); err != nil {
		return err
	}
	if d.projects, err = missingKeys(ctx, db, "SELECT id FROM projects", keysOf(b.Projects, func(p flagadmin.Project) string { return p.ID })); err != nil {
		return err
	}
	if d.features, err = missingKeys(ctx, db, "SELECT name FROM features", keysOf(b.Features, func(f flagadmin.Feature) string { return f.Name })); err != nil {
		return err
	}
	d.tokens, err = missingKeys(ctx, db, "SELECT secret_hash FROM api_tokens", keysOf(b.Tokens, func(t flagadmin.APIToken) string { return t.SecretHash }))
	return err
}

// keysOf is the set of the keys of rows.
func keysOf[T any, K comparable](rows []T, key func(T) K) map[K]bool {
	out := make(map[K]bool, len(rows))
	for _, r := range rows {
		out[key(r)] = true
	}
	return out
}

// missingKeys returns the keys query selects that keep lacks.
func missingKeys[K comparable](ctx context.Context, db bun.IDB, query string, keep map[K]bool) ([]K, error) {
	var all []K
	if err := db.NewRaw(query).Scan(ctx, &all); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	var out []K
	for _, k := range all {
		if !keep[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// apply deletes the rows, with what refers to them: a project's features
// (its members, favorites and figures go by the foreign keys' cascades), a
// group's memberships and roles, a user's tokens, memberships, roles and
// favorites.
func (d *followDeletes) apply(ctx context.Context, db bun.IDB) error {
	steps := []struct {
		table, column string
		keys          []any
	}{
		{"api_tokens", "secret_hash", anys(d.tokens)},
		{"features", "name", anys(d.features)},
		{"features", "project", anys(d.projects)},
		{"projects", "id", anys(d.projects)},
		{"user_groups", "id", anys(d.groups)},
		{"api_tokens", "user_id", anys(d.users)},
		{"project_members", "user_id", anys(d.users)},
		{"group_members", "user_id", anys(d.users)},
		{"project_favorites", "user_id", anys(d.users)},
		{"users", "id", anys(d.users)},
	}
	for _, st := range steps {
		for part := range slices.Chunk(st.keys, inListChunk) {
			if _, err := db.NewDelete().TableExpr(st.table).Where("? IN (?)", bun.Ident(st.column), bun.List(part)).Exec(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// inListChunk bounds the keys of one IN list.
const inListChunk = 500

// anys is keys as []any.
func anys[K any](keys []K) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out
}

// touchedProjects returns the projects whose figures b may change, read
// before it is applied: the projects it upserts, those of the features it
// upserts or deletes (before and after), and those where the users and
// groups it deletes, and the groups it upserts, hold roles.
func touchedProjects(ctx context.Context, db bun.IDB, b *follow.Batch) ([]string, error) {
	set := map[string]bool{}
	for _, p := range b.Projects {
		set[p.ID] = true
	}
	names := anys(b.DeleteFeatures)
	for _, f := range b.Features {
		set[f.Project] = true
		names = append(names, f.Name)
	}
	groups := anys(b.DeleteGroups)
	for _, g := range b.Groups {
		groups = append(groups, g.ID)
	}
	queries := []struct {
		sql  string // its IN lists all take the keys
		keys []any
	}{
		{"SELECT DISTINCT project FROM features WHERE name IN (?)", names},
		{"SELECT DISTINCT project_id FROM project_members WHERE group_id IN (?)", groups},
		{`SELECT project_id FROM project_members WHERE user_id IN (?0)
			UNION SELECT pm.project_id FROM project_members pm JOIN group_members gm ON gm.group_id = pm.group_id WHERE gm.user_id IN (?0)`, anys(b.DeleteUsers)},
	}
	for _, q := range queries {
		for part := range slices.Chunk(q.keys, inListChunk) {
			var ids []string
			if err := db.NewRaw(q.sql, bun.List(part)).Scan(ctx, &ids); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, err
			}
			for _, id := range ids {
				set[id] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out, nil
}

// upsertFollowRows stores b's rows as given: each replaces the stored row
// of its key, or is added; a group's members, a project's members and
// favorites are replaced with the lists given, in the dialect d's upserts.
func upsertFollowRows(ctx context.Context, d sqlDialect, t *txn, b *follow.Batch) error {
	for _, upsert := range []func(context.Context, sqlDialect, *txn, *follow.Batch) error{
		upsertFollowUsers, upsertFollowGroups, upsertFollowProjects, upsertFollowFeatures, upsertFollowTokens,
	} {
		if err := upsert(ctx, d, t, b); err != nil {
			return err
		}
	}
	return nil
}

// upsertFollowUsers stores b's users.
func upsertFollowUsers(ctx context.Context, d sqlDialect, t *txn, b *follow.Batch) error {
	users := make([]userRow, len(b.Users))
	for i, u := range b.Users {
		users[i] = userRowOf(u)
	}
	return upsertWithIDs(ctx, d, t, users, "id", func(r userRow) int64 { return r.ID })
}

// upsertFollowGroups stores b's groups, each with the members given in
// place of its stored ones.
func upsertFollowGroups(ctx context.Context, d sqlDialect, t *txn, b *follow.Batch) error {
	groups := make([]groupRow, len(b.Groups))
	var groupIDs []any
	var members []groupMemberRow
	for i, g := range b.Groups {
		groups[i] = groupRow{ID: g.ID, Name: g.Name}
		groupIDs = append(groupIDs, g.ID)
		for _, uid := range distinct(g.Users) {
			members = append(members, groupMemberRow{GroupID: g.ID, UserID: uid})
		}
	}
	if err := upsertWithIDs(ctx, d, t, groups, "id", func(r groupRow) int64 { return r.ID }); err != nil {
		return err
	}
	if err := deleteIn(ctx, t, "group_members", "group_id", groupIDs); err != nil {
		return err
	}
	return insertChunks(ctx, t, members)
}

// upsertFollowProjects stores b's projects, each with the members and
// favorites given in place of its stored ones.
func upsertFollowProjects(ctx context.Context, d sqlDialect, t *txn, b *follow.Batch) error {
	projects := make([]projectRow, len(b.Projects))
	var projectIDs []any
	var roles []projectMemberRow
	var favorites []favoriteRow
	for i, p := range b.Projects {
		projects[i] = projectRowOf(p)
		projectIDs = append(projectIDs, p.ID)
		ms, err := memberRows(p.ID, p.Members)
		if err != nil {
			return err
		}
		roles = append(roles, ms...)
		for _, uid := range distinct(p.FavoritedBy) {
			favorites = append(favorites, favoriteRow{ProjectID: p.ID, UserID: uid})
		}
	}
	if err := upsertRows(ctx, d, t, projects, "id"); err != nil {
		return err
	}
	for _, table := range []string{"project_members", "project_favorites"} {
		if err := deleteIn(ctx, t, table, "project_id", projectIDs); err != nil {
			return err
		}
	}
	if err := insertChunks(ctx, t, roles); err != nil {
		return err
	}
	return insertChunks(ctx, t, favorites)
}

// upsertFollowFeatures stores b's features.
func upsertFollowFeatures(ctx context.Context, d sqlDialect, t *txn, b *follow.Batch) error {
	features := make([]featureRow, len(b.Features))
	for i, f := range b.Features {
		r, err := featureRowOf(f)
		if err != nil {
			return err
		}
		features[i] = r
	}
	return upsertRows(ctx, d, t, features, "name")
}

// upsertFollowTokens stores b's API tokens.
func upsertFollowTokens(ctx context.Context, d sqlDialect, t *txn, b *follow.Batch) error {
	tokens := make([]tokenRow, len(b.Tokens))
	for i, tk := range b.Tokens {
		tokens[i] = tokenRowOf(tk)
	}
	return upsertRows(ctx, d, t, tokens, "secret_hash")
}

// deleteIn deletes the rows of table whose column is one of keys.
func deleteIn(ctx context.Context, db bun.IDB, table, column string, keys []any) error {
	for part := range slices.Chunk(keys, inListChunk) {
		if _, err := db.NewDelete().TableExpr(table).Where("? IN (?)", bun.Ident(column), bun.List(part)).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// upsertChunk bounds the rows of one multi-row INSERT of a follow batch
// (SQLite allows fewer bound values in a statement).
const upsertChunk = 500

// insertChunks inserts rows by multi-row INSERTs of at most upsertChunk.
func insertChunks[T any](ctx context.Context, db bun.IDB, rows []T) error {
	for part := range slices.Chunk(rows, upsertChunk) {
		if err := insertRows(ctx, db, part); err != nil {
			return err
		}
	}
	return nil
}

// upsertRows inserts rows, a slice of models of a table whose primary key
// is key; a row whose key exists replaces the stored one (every other
// column set to the row's, in the dialect d's upsert).
func upsertRows[T any](ctx context.Context, d sqlDialect, db bun.IDB, rows []T, key string) error {
	table := db.Dialect().Tables().Get(reflect.TypeFor[T]())
	for part := range slices.Chunk(rows, upsertChunk) {
		q := d.Upsert(db.NewInsert().Model(&part), key, table.DataFields)
		if _, err := q.Returning("").Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// upsertWithIDs is upsertRows for a table whose ids the database generates
// (ids.go): under d's LockExplicitIDs, raising the ids past the largest
// given.
func upsertWithIDs[T any](ctx context.Context, d sqlDialect, db bun.IDB, rows []T, key string, id func(T) int64) error {
	if len(rows) == 0 {
		return nil
	}
	table := db.Dialect().Tables().Get(reflect.TypeFor[T]()).Name
	if err := d.LockExplicitIDs(ctx, db, table); err != nil {
		return err
	}
	if err := upsertRows(ctx, d, db, rows, key); err != nil {
		return err
	}
	var largest int64
	for _, r := range rows {
		largest = max(largest, id(r))
	}
	return d.RaiseIDs(ctx, db, table, largest)
}
