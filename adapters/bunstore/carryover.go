package bunstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Databases of the development versions. Before the baseline, the schema
// was made by 18 migrations named 20250601000001 to 20250601000018 (12
// never existed; 15 was 17 under an earlier name; 18, event_groups, came
// last and may be missing). A database they made
// holds the same base tables as the baseline, row for row: users, groups
// and their members, projects, members and favorites, features, tokens,
// events with their ids, webhook sinks, the event order row, the version
// counter and the id generators. Its summaries differ (event_counts keyed
// by strings, project_last_events), so carryOver drops them and rebuilds
// them from the base tables, and leaves everything else as it is.

// devMigrations are the migrations a development database must have run
// to be carried over: every one of the last development version's. A
// database that lacks one was made by an older version still.
var devMigrations = []string{
	"20250601000001", "20250601000002", "20250601000003", "20250601000004", "20250601000005",
	"20250601000006", "20250601000007", "20250601000008", "20250601000009", "20250601000010",
	"20250601000011", "20250601000013", "20250601000014", "20250601000016", "20250601000017",
}

// devMonthsMigration is migration 17's name on databases made before it
// was renamed: either counts.
const devMonthsMigration = "20250601000015"

// devSummaries are the summary tables of the development schema.
var devSummaries = []string{"project_last_events", "event_counts", "project_stats"}

// oldMigrations returns the names in bun_migrations of migrations from
// before the baseline: those of a development database.
func oldMigrations(ctx context.Context, db bun.IDB) ([]string, error) {
	var names []string
	err := db.NewRaw("SELECT name FROM bun_migrations WHERE name < ? ORDER BY name", baseline).Scan(ctx, &names)
	return names, err
}

// carryOver brings a development database (old: the names of its
// migrations) to the baseline: the summaries dropped, the tables the
// baseline adds created, the summaries rebuilt from the base tables, and
// the development migrations' rows removed from bun_migrations. On
// PostgreSQL and SQLite it is one transaction; on MySQL, whose DDL commits
// at once, every step can run again after a failure part-way.
func carryOver(ctx context.Context, db *bun.DB, old []string) error {
	if missing := missingDevMigrations(old); len(missing) > 0 {
		return fmt.Errorf("this database was made by a development version older than the last one before the first release "+
			"(it lacks migrations %s): migrate it with that version first, or start with a new database", strings.Join(missing, ", "))
	}
	groups, err := columnExists(ctx, db, "events", "group_type")
	if err != nil {
		return err
	}
	var stmts []string
	if !groups {
		stmts = devEventGroups(db.Dialect().Name())
	}
	for _, t := range devSummaries {
		stmts = append(stmts, "DROP TABLE IF EXISTS "+t)
	}
	schema, err := baselineSchema(ctx, db)
	if err != nil {
		return err
	}
	stmts = append(stmts, schema...)
	done := func(ctx context.Context, tx bun.IDB) error {
		if err := rebuildSummaries(ctx, tx, "event_counts", "project_stats"); err != nil {
			return err
		}
		_, err := tx.NewRaw("DELETE FROM bun_migrations WHERE name IN (?)", bun.List(old)).Exec(ctx)
		return err
	}
	if db.Dialect().Name() == dialect.MySQL {
		if err := execAll(ctx, db, stmts); err != nil {
			return err
		}
		return inMigrationTx(ctx, db, done)
	}
	return inMigrationTx(ctx, db, func(ctx context.Context, tx bun.IDB) error {
		if err := execAll(ctx, tx, stmts); err != nil {
			return err
		}
		return done(ctx, tx)
	})
}

// missingDevMigrations returns the development migrations old lacks.
func missingDevMigrations(old []string) []string {
	var missing []string
	for _, name := range devMigrations {
		if !slices.Contains(old, name) && !(name == "20250601000017" && slices.Contains(old, devMonthsMigration)) {
			missing = append(missing, name)
		}
	}
	return missing
}

// devEventGroups is development migration 18, event_groups, which a
// database made before it lacks: events keep Unleash's groupType and
// groupId, both text; group_id was an integer before.
func devEventGroups(name dialect.Name) []string {
	switch name {
	case dialect.PG:
		return []string{
			"ALTER TABLE events ADD COLUMN IF NOT EXISTS group_type TEXT NULL",
			"ALTER TABLE events ALTER COLUMN group_id TYPE TEXT USING group_id::text",
		}
	case dialect.MySQL:
		return []string{"ALTER TABLE events ADD COLUMN group_type VARCHAR(255) NULL, MODIFY group_id VARCHAR(700) NULL"}
	default:
		// SQLite cannot change a column's type: the column is rebuilt.
		return []string{
			"ALTER TABLE events ADD COLUMN group_type TEXT NULL",
			"ALTER TABLE events ADD COLUMN group_id_text TEXT NULL",
			"UPDATE events SET group_id_text = CAST(group_id AS TEXT) WHERE group_id IS NOT NULL",
			"DROP INDEX IF EXISTS events_group",
			"ALTER TABLE events DROP COLUMN group_id",
			"ALTER TABLE events RENAME COLUMN group_id_text TO group_id",
			"CREATE INDEX events_group ON events (group_id, created_at, id) WHERE group_id IS NOT NULL",
		}
	}
}
