package bunstore

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// TestCarryOver makes a database as the development versions left it (the
// schema their 17 migrations made, captured in testdata/devschema, with
// rows in every table, summaries gone wrong and id generators past
// explicit ids), opens it, and checks the carry-over to the baseline:
// every row of every base table is still there as it was, bun_migrations
// names the baseline (and the migrations after it), the schema is a new database's, the summaries
// answer as the plain store does, ids continue above the largest, the
// version does not go back, and opening again changes nothing.
func TestCarryOver(t *testing.T) {
	for _, e := range []struct {
		name   string
		schema string
		url    func(testing.TB) string
	}{{"SQLite", "sqlite", dbtest.SQLite}, {"Postgres", "postgres", dbtest.Postgres}, {"MySQL", "mysql", dbtest.MySQL}} {
		for _, groups := range []bool{false, true} {
			name := e.name + map[bool]string{false: "/before event_groups", true: "/after event_groups"}[groups]
			t.Run(name, func(t *testing.T) { testCarryOver(t, e.schema, e.url, groups) })
		}
	}
}

// testCarryOver is TestCarryOver on one database, made with the
// development migration 18 (event_groups) or without it.
func testCarryOver(t *testing.T, schema string, newURL func(testing.TB) string, groups bool) {
	ctx := context.Background()
	url := newURL(t)
	dev := devDatabase(t, url, schema, groups)
	before, err := baseRows(ctx, dev.db)
	if err != nil {
		t.Fatal(err)
	}
	oldVersion, err := dev.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dev.Close()

	s, err := Open(ctx, url)
	if err != nil {
		t.Fatalf("Open a development database: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	after, err := baseRows(ctx, s.db)
	if err != nil {
		t.Fatal(err)
	}
	// The migrations after the baseline add retention's row of
	// store_versions.
	before["store_versions"] = append(before["store_versions"], fmt.Sprintf("shard=%d v=0", pruneVersionShard))
	for _, table := range slices.Sorted(maps.Keys(before)) {
		if !reflect.DeepEqual(after[table], before[table]) {
			t.Errorf("rows of %s after the carry-over:\n got %q\nwant %q", table, after[table], before[table])
		}
	}
	var names, want []string
	if err := s.db.NewRaw("SELECT name FROM bun_migrations ORDER BY name").Scan(ctx, &names); err != nil {
		t.Fatal(err)
	}
	for _, m := range newMigrations(migrateOptions{}).Sorted() {
		want = append(want, m.Name) // the baseline, then the migrations after it
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("bun_migrations after the carry-over: %v, want %v (the baseline in place of the old ones)", names, want)
	}
	if v, err := s.Version(ctx); err != nil || v < oldVersion {
		t.Errorf("version after the carry-over: %d (%v), want at least %d", v, err, oldVersion)
	}
	fresh, err := Open(ctx, newURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if got, want := schemaOf(t, s.db), schemaOf(t, fresh.db); !reflect.DeepEqual(got, want) {
		t.Errorf("schema after the carry-over:\n got %q\nwant a new database's %q", got, want)
	}
	checkSummariesAgree(t, s, url)
	checkIDsContinue(t, s)

	// Opened again, the database is migrated: nothing changes.
	rows, err := baseRows(ctx, s.db)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Open(ctx, url)
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	defer again.Close()
	if got, err := baseRows(ctx, again.db); err != nil || !reflect.DeepEqual(got, rows) {
		t.Errorf("opening again changed the rows (%v)", err)
	}
}

// TestCarryOverRefusesOlderDevelopmentDatabases: a database that lacks
// one of the last development version's migrations is refused with a
// message saying so, and left as it was.
func TestCarryOverRefusesOlderDevelopmentDatabases(t *testing.T) {
	ctx := context.Background()
	url := dbtest.SQLite(t)
	dev := devDatabase(t, url, "sqlite", true)
	if _, err := dev.db.ExecContext(ctx, "DELETE FROM bun_migrations WHERE name = '20250601000014'"); err != nil {
		t.Fatal(err)
	}
	dev.Close()
	_, err := Open(ctx, url)
	if err == nil || !strings.Contains(err.Error(), "lacks migrations 20250601000014") {
		t.Fatalf("Open an older development database: got %v, want a refusal naming 20250601000014", err)
	}
	s, err := Open(ctx, url, WithoutMigrate())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if exists, err := tableExists(ctx, s.db, "project_last_events"); err != nil || !exists {
		t.Errorf("the refused database lost project_last_events (%v)", err)
	}
}

// devDatabase makes, at url, the database of the development versions
// (testdata/devschema/<schema>.sql, and with groups development migration
// 18) with rows in every table, and returns a store on it that has not
// migrated.
func devDatabase(t *testing.T, url, schema string, groups bool) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, url, WithoutMigrate())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ddl, err := devSchema(ctx, s.db, schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := execAll(ctx, s.db, ddl); err != nil {
		t.Fatalf("development schema: %v", err)
	}
	if groups {
		ddl := append(devEventGroups(s.dialect), "INSERT INTO bun_migrations (name, group_id) VALUES ('20250601000018', 2)")
		if err := execAll(ctx, s.db, ddl); err != nil {
			t.Fatalf("development migration 18: %v", err)
		}
	}
	if err := execAll(ctx, s.db, devRows); err != nil {
		t.Fatalf("development rows: %v", err)
	}
	for _, e := range devEvents {
		payload, meta := flagadmin.SearchTexts(e.Event)
		columns, values := "", ""
		args := []any{e.ID, e.CreatedAt.UnixMilli(), e.Type, e.CreatedBy, e.CreatedByUserID, e.Environment, e.Project,
			e.FeatureName, string(e.Data), nil, e.tags, payload, meta}
		switch {
		case e.group != nil && groups:
			columns, values = ", group_type, group_id", ", ?, ?"
			args = append(args, "transaction", fmt.Sprint(*e.group))
		case e.group != nil:
			columns, values = ", group_id", ", ?"
			args = append(args, *e.group)
		}
		_, err := s.db.ExecContext(ctx, `INSERT INTO events (id, created_at, type, created_by, created_by_user_id, environment, project,
			feature_name, data, pre_data, tags, search_payload, search_meta`+columns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?`+values+`)`, args...)
		if err != nil {
			t.Fatalf("development event %d: %v", e.ID, err)
		}
	}
	if s.dialect == dialect.PG {
		// As the development versions left the identities: past the
		// explicit ids (raiseSequence).
		for table, id := range map[string]int{"users": 42, "user_groups": 7, "project_members": 2, "events": 9} {
			if _, err := s.db.ExecContext(ctx, "SELECT setval(pg_get_serial_sequence(?, 'id'), ?)", table, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

// devSchema returns the statements of testdata/devschema/<schema>.sql.
func devSchema(ctx context.Context, db bun.IDB, schema string) ([]string, error) {
	b, err := os.ReadFile("testdata/devschema/" + schema + ".sql")
	if err != nil {
		return nil, err
	}
	ddl := string(b)
	if schema == "mysql" {
		collation, err := mysqlBinaryCollation(ctx, db)
		if err != nil {
			return nil, err
		}
		ddl = strings.ReplaceAll(ddl, "{collation}", collation)
	}
	return statements(ddl), nil
}

// devRows fill every table of the development schema, summaries included
// (with figures no base table agrees with: the carry-over rebuilds them).
var devRows = []string{
	`INSERT INTO users (id, name, username, email, root_role, is_service) VALUES
		(3, 'Ada', 'ada', 'ada@example.com', 'Admin', FALSE), (41, 'Eve', '', 'eve@example.com', 'Editor', FALSE),
		(42, 'CI bot', 'ci-bot', '', 'Editor', TRUE)`,
	`INSERT INTO user_groups (id, name) VALUES (7, 'Platform')`,
	`INSERT INTO group_members (group_id, user_id) VALUES (7, 41), (7, 3)`,
	`INSERT INTO projects (id, name, description, mode, created_at, archived_at) VALUES
		('web', 'Web', 'The shop', 'open', 1700000000000, NULL), ('old', 'Old', '', 'private', 1600000000000, 1650000000000)`,
	`INSERT INTO project_members (id, project_id, user_id, group_id, role) VALUES (1, 'web', 41, NULL, 'Owner'), (2, 'web', NULL, 7, 'Member')`,
	`INSERT INTO project_favorites (project_id, user_id) VALUES ('web', 3)`,
	`INSERT INTO features (name, project, type, stale, created_at, archived_at, last_seen_at, tags, lifecycle_stage, lifecycle_status, lifecycle_status_value) VALUES
		('checkout', 'web', 'release', FALSE, 1700000000000, NULL, 1700000500000, '[{"value":"shop","type":"simple"}]', 'live', '', ''),
		('dark-mode', 'web', 'experiment', TRUE, 1690000000000, NULL, NULL, NULL, 'initial', '', ''),
		('legacy', 'old', 'kill-switch', FALSE, 1600000000000, 1650000000000, 1640000000000, '[]', 'completed', 'kept', 'v1')`,
	`INSERT INTO api_tokens (secret_hash, name, type, user_id, project, environment, expires_at, created_at) VALUES
		('` + flagadmin.HashSecret("user:dev-secret") + `', 'ci', 'client', 42, '*', 'development', NULL, 1700000000000),
		('` + flagadmin.HashSecret("*:*.admin-secret") + `', 'admin', 'admin', NULL, '*', '*', 1900000000000, 1700000000001)`,
	`INSERT INTO webhook_sinks (name, after_id, delivered, attempts, last_error, last_error_at, holder, lease_until, seq, created_at) VALUES
		('audit', 5, 3, 2, 'HTTP 503', 1700000100000, 'server-1', 1700000200000, 9, 1700000000000)`,
	`UPDATE store_versions SET v = v + 5 WHERE shard = 3`,
	`INSERT INTO event_counts (dim, val, n) VALUES ('all', '', 999), ('project', 'web', 123)`,
	`INSERT INTO project_stats (project_id, features, stale, fresh_release, fresh_experiment, fresh_operational, fresh_kill_switch, fresh_permission, members, last_seen_at)
		VALUES ('web', 50, 40, 0, 0, 0, 0, 0, 99, NULL)`,
	`INSERT INTO project_last_events (project, shard, last_event_at) VALUES ('web', 3, 1)`,
}

// devEvent is an event of the development database, with its stored tags
// and group.
type devEvent struct {
	flagadmin.Event
	tags  *string
	group *int64
}

// devEvents are the events of the development database: ids with gaps.
var devEvents = func() []devEvent {
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	web, checkout, prod := "web", "checkout", "production"
	uid, group := int64(41), int64(7)
	tags := `[{"value":"shop","type":"simple"}]`
	return []devEvent{
		{Event: flagadmin.Event{ID: 1, CreatedAt: at, Type: flagadmin.EventProjectCreated, CreatedBy: "ada@example.com", Project: &web, Data: []byte(`{"id":"web"}`)}},
		{Event: flagadmin.Event{ID: 2, CreatedAt: at.Add(time.Hour), Type: flagadmin.EventFeatureCreated, CreatedBy: "eve@example.com", CreatedByUserID: &uid,
			Project: &web, FeatureName: &checkout, Data: []byte(`{"name":"checkout"}`)}, tags: &tags},
		{Event: flagadmin.Event{ID: 5, CreatedAt: at.Add(25 * time.Hour), Type: flagadmin.EventFeatureUpdated, CreatedBy: "eve@example.com", CreatedByUserID: &uid,
			Project: &web, FeatureName: &checkout, Environment: &prod, Data: []byte(`{"enabled":true}`)}, group: &group},
		{Event: flagadmin.Event{ID: 9, CreatedAt: at.AddDate(0, 1, 0), Type: flagadmin.EventUserCreated, CreatedBy: "admin", Data: []byte(`{"id":42}`)}},
	}
}()

// baseRows returns every row of the base tables (all but the summaries
// and bun's own), by table, as text, in key order.
func baseRows(ctx context.Context, db *bun.DB) (map[string][]string, error) {
	keys := map[string]string{
		"users": "id", "user_groups": "id", "group_members": "group_id, user_id", "projects": "id", "project_members": "id",
		"project_favorites": "project_id, user_id", "features": "name", "api_tokens": "secret_hash", "events": "id",
		"webhook_sinks": "name", "event_order": "id", "store_versions": "shard",
	}
	// The columns of events are named: development migration 18 moved
	// group_id (on SQLite) and added group_type, which its rows lack.
	columns := map[string]string{"events": `id, created_at, type, created_by, created_by_user_id, environment, project, feature_name,
		data, pre_data, tags, group_id, search_payload, search_meta`}
	out := map[string][]string{}
	for table, key := range keys {
		cols := columns[table]
		if cols == "" {
			cols = "*"
		}
		rows, err := db.QueryContext(ctx, "SELECT "+cols+" FROM "+table+" ORDER BY "+key)
		if err != nil {
			return nil, err
		}
		out[table], err = rowTexts(rows)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rowTexts reads rows as text, column name=value.
func rowTexts(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			parts[i] = fmt.Sprintf("%s=%v", cols[i], v)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out, rows.Err()
}

// schemaOf describes the store's tables: their columns and indexes, and
// on SQLite its triggers (bun's own tables left out).
func schemaOf(t *testing.T, db *bun.DB) []string {
	t.Helper()
	ctx := context.Background()
	var queries []string
	switch db.Dialect().Name() {
	case dialect.PG:
		queries = []string{
			`SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || is_identity
				FROM information_schema.columns WHERE table_schema = current_schema() AND table_name NOT LIKE 'bun_%'`,
			`SELECT indexname || ': ' || replace(indexdef, current_schema() || '.', '') FROM pg_indexes
				WHERE schemaname = current_schema() AND tablename NOT LIKE 'bun_%'`,
			`SELECT conname || ': ' || pg_get_constraintdef(oid) FROM pg_constraint
				WHERE connamespace = current_schema()::regnamespace AND conrelid::regclass::text NOT LIKE 'bun_%'`,
			`SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgrelid = 'events'::regclass`,
		}
	case dialect.MySQL:
		queries = []string{
			`SELECT CONCAT(table_name, '.', column_name, ' ', column_type, ' ', is_nullable, ' ', extra, ' ', collation_name)
				FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name NOT LIKE 'bun\_%'`,
			`SELECT CONCAT(table_name, '.', index_name, ' ', seq_in_index, ' ', column_name, ' ', non_unique)
				FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name NOT LIKE 'bun\_%'`,
			`SELECT CONCAT(constraint_name, ' ', table_name, ' ', referenced_table_name, ' ', delete_rule)
				FROM information_schema.referential_constraints WHERE constraint_schema = DATABASE()`,
		}
	default:
		queries = []string{
			`SELECT m.name || '.' || c.name || ' ' || c.type || ' ' || c."notnull" || ' ' || c.pk
				FROM sqlite_master m, pragma_table_info(m.name) c WHERE m.type = 'table' AND m.name NOT LIKE 'bun_%' AND m.name NOT LIKE 'sqlite_%'`,
			`SELECT m.name || '.' || i.name || ' ' || i."unique" || ' ' || i.partial || ' ' || (SELECT group_concat(name) FROM pragma_index_info(i.name))
				FROM sqlite_master m, pragma_index_list(m.name) i WHERE m.type = 'table' AND m.name NOT LIKE 'bun_%'`,
			`SELECT m.name || ' ' || f."table" || ' ' || f."from" || ' ' || f."to" || ' ' || f.on_delete
				FROM sqlite_master m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table'`,
			`SELECT type || ' ' || name FROM sqlite_master WHERE type IN ('trigger', 'view') OR sql LIKE 'CREATE VIRTUAL%'`,
		}
	}
	var out []string
	for _, q := range queries {
		var part []string
		if err := db.NewRaw(q).Scan(ctx, &part); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, part...)
	}
	slices.Sort(out)
	return out
}

// checkSummariesAgree checks the tuned store s against the plain store on
// the same database: the project lists and a few searches whose totals
// and pages the summaries serve.
func checkSummariesAgree(t *testing.T, s *Store, url string) {
	t.Helper()
	ctx := context.Background()
	plain, err := Open(ctx, url, WithoutTuning())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	viewer := int64(3)
	cut := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, archived := range []bool{false, true} {
		q := flagadmin.ProjectStatsQuery{Archived: archived, FavoritesOf: &viewer, PotentiallyStaleBefore: flagadmin.PotentiallyStaleCutoffs(cut)}
		got, err := s.ProjectStats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.ProjectStats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("project list (archived %v) after the carry-over:\n got %+v\nwant %+v", archived, got, want)
		}
	}
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	next := day.AddDate(0, 0, 1)
	for _, q := range []flagadmin.EventQuery{
		{Limit: 10}, {Limit: 10, Projects: []string{"web"}}, {Limit: 10, Types: []string{flagadmin.EventFeatureUpdated}},
		{Limit: 10, RequireProject: true, HiddenProjects: []string{"web"}}, {Limit: 10, From: &day, Before: &next},
		{Limit: 10, Text: "checkout"},
	} {
		got, err := s.SearchEvents(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.SearchEvents(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || (q.Text == "" && want.Total == 0 && len(q.HiddenProjects) == 0) {
			t.Errorf("search %+v after the carry-over: got total %d, %d events; want %d, %d", q, got.Total, len(got.Events), want.Total, len(want.Events))
		}
	}
}

// checkIDsContinue checks that the ids the database generates after the
// carry-over are above the largest stored.
func checkIDsContinue(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	b := &flagadmin.Batch{
		Users:  []flagadmin.User{{Name: "New", RootRole: flagadmin.RoleViewer}},
		Groups: []flagadmin.Group{{Name: "New group"}},
		Events: []flagadmin.Event{{Type: flagadmin.EventUserCreated, CreatedBy: "test", CreatedAt: time.Now()}},
	}
	if err := s.Write(ctx, b); err != nil {
		t.Fatalf("Write after the carry-over: %v", err)
	}
	if b.Users[0].ID <= 42 || b.Groups[0].ID <= 7 || b.Events[0].ID <= 9 {
		t.Errorf("ids after the carry-over: user %d, group %d, event %d; want above 42, 7 and 9", b.Users[0].ID, b.Groups[0].ID, b.Events[0].ID)
	}
}
