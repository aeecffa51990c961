package bunstore

import (
	"context"
	"embed"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// The schema is written once per database (schema/*.sql), as the
// baseline: the first migration, which creates the whole schema of the
// first release.
//
// The rule: from now on a migration is added (with a later name, to
// newMigrations) only for a change that must carry the data of existing
// databases, and it is never edited afterwards. Every migration must be
// safe to run again after a failure part-way (MySQL cannot roll DDL
// back): create IF NOT EXISTS, check before altering.
//
// A database made by a development version, before the baseline, has in
// bun_migrations only names older than the baseline's; it is refused
// (ErrDevelopmentSchema).

// baseline is the name of the baseline migration.
const baseline = "20261202120000"

// newMigrations returns the schema's migrations in the dialect d, in
// order, reporting each to o.
func newMigrations(d sqlDialect, o migrateOptions) *migrate.Migrations {
	ms := migrate.NewMigrations()
	add := func(name, comment string, up func(ctx context.Context, db *bun.DB) error) {
		ms.Add(migrate.Migration{
			Name:    name,
			Comment: comment,
			Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
				return o.step(name, comment, func() error { return up(ctx, m.DB()) })
			},
		})
	}
	add(baseline, "baseline: the schema of the first release", func(ctx context.Context, db *bun.DB) error {
		return migrateBaseline(ctx, d, db)
	})
	return ms
}

// migrateBaseline is the baseline migration: the schema of schemaFiles.
func migrateBaseline(ctx context.Context, d sqlDialect, db *bun.DB) error {
	stmts, err := baselineSchema(ctx, d, db)
	if err != nil {
		return err
	}
	return inMigrationTx(ctx, d, db, func(ctx context.Context, tx bun.IDB) error { return execAll(ctx, tx, stmts) })
}

//go:embed schema/*.sql
var schemaFiles embed.FS

// baselineSchema returns the statements of the baseline schema of the
// dialect d, schema/postgres.sql, mysql.sql or sqlite.sql, split at blank
// lines, without comment lines, with what the dialect fills in from db
// ({collation} on MySQL).
func baselineSchema(ctx context.Context, d sqlDialect, db bun.IDB) ([]string, error) {
	text, err := schemaFiles.ReadFile("schema/" + d.SchemaFile())
	if err != nil {
		return nil, err
	}
	ddl, err := d.FillSchema(ctx, db, string(text))
	if err != nil {
		return nil, err
	}
	return statements(ddl), nil
}

// statements splits a schema file into its statements: runs of lines
// between blank lines, without their comment lines (--).
func statements(ddl string) []string {
	var out []string
	for _, chunk := range strings.Split(ddl, "\n\n") {
		var lines []string
		for _, line := range strings.Split(chunk, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "--") {
				lines = append(lines, line)
			}
		}
		if stmt := strings.TrimSpace(strings.Join(lines, "\n")); stmt != "" {
			out = append(out, stmt)
		}
	}
	return out
}

// inMigrationTx runs fn in one transaction of db: its own under a
// migration lock (PostgreSQL, and MySQL, where only data statements roll
// back), else the one the migrations run in (SQLite, migrate.go), which db
// is already in.
func inMigrationTx(ctx context.Context, d sqlDialect, db *bun.DB, fn func(ctx context.Context, tx bun.IDB) error) error {
	if lock, _ := d.MigrationLock(); lock == "" {
		return fn(ctx, db)
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return fn(ctx, tx) })
}

// execAll runs statements in order.
func execAll(ctx context.Context, db bun.IDB, stmts []string) error {
	for _, stmt := range stmts {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%w (in %.60q)", err, stmt)
		}
	}
	return nil
}

// syncSummaries brings the summaries in line with the store's tuning
// (summary_state): those the store keeps and another store let go stale
// are rebuilt from the base tables, and the store reads them again; those
// it does not keep are marked stale, since its writes will not keep them.
func (s *Store) syncSummaries(ctx context.Context, db *bun.DB, o migrateOptions) error {
	states, err := summaryStates(ctx, db)
	if err != nil {
		return err
	}
	kept := s.tuning.summaries()
	for _, name := range slices.Sorted(maps.Keys(kept)) {
		switch stale := states[name]; {
		case kept[name] && stale:
			err = o.step(name, "rebuild the summary "+name+" from the base tables", func() error {
				return inMigrationTx(ctx, s.sqlDialect, db, func(ctx context.Context, tx bun.IDB) error {
					return rebuildSummaries(ctx, s.sqlDialect, tx, name)
				})
			})
			if err == nil {
				s.tuning.stale.set(name, false)
			}
		case !kept[name] && !stale:
			_, err = db.ExecContext(ctx, "UPDATE summary_state SET stale = ? WHERE name = ?", true, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkSummaries is syncSummaries for a store opened without migrating:
// it marks stale the summaries the store does not keep, and answers
// without those it keeps that are stale (tuning.stale), saying so once. A
// database without the schema yet is left alone (Migrate will see to it).
func (s *Store) checkSummaries(ctx context.Context) error {
	states, err := summaryStates(ctx, s.db)
	if err != nil {
		if exists, existsErr := tableExists(ctx, s.sqlDialect, s.db, "summary_state"); existsErr == nil && !exists {
			return nil
		}
		return withDetail(s.fail("open", err))
	}
	kept := s.tuning.summaries()
	for _, name := range slices.Sorted(maps.Keys(kept)) {
		switch {
		case kept[name] && states[name]:
			s.tuning.stale.set(name, true)
			s.log.Warn("bunstore: the summary "+name+" is out of date (a store without it wrote to this database): "+
				"answering without it until the migrations rebuild it (flagadmin migrate)", "summary", name)
		case !kept[name] && !states[name]:
			if _, err := s.db.ExecContext(ctx, "UPDATE summary_state SET stale = ? WHERE name = ?", true, name); err != nil {
				return withDetail(s.fail("open", err))
			}
		}
	}
	return nil
}

// summaryStates reads summary_state: whether each summary is stale.
func summaryStates(ctx context.Context, db bun.IDB) (map[string]bool, error) {
	var rows []struct {
		Name  string `bun:"name"`
		Stale bool   `bun:"stale"`
	}
	if err := db.NewRaw("SELECT name, stale FROM summary_state").Scan(ctx, &rows); err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(rows))
	for _, r := range rows {
		out[r.Name] = r.Stale
	}
	return out, nil
}

// rebuildSummaries recomputes the summaries names from the base tables,
// in the transaction tx, and marks them fresh. It first locks what they
// are computed from, in the lock order of writers (record.go), so that no
// writer changes it meanwhile and none waits for it in a circle: the base
// tables against changes, then the summaries against writers, then
// events against inserts (sqlDialect.SummaryLocks). SQLite's migration
// transaction holds the whole database already.
func rebuildSummaries(ctx context.Context, d sqlDialect, tx bun.IDB, names ...string) error {
	for _, lock := range d.SummaryLocks(baseTables, eventOrderSQL) {
		// Some are SELECTs: their rows are read and dropped.
		rows, err := tx.QueryContext(ctx, lock)
		if err != nil {
			return err
		}
		if err := rows.Close(); err != nil {
			return err
		}
	}
	for _, name := range names {
		if err := rebuild(ctx, tx, name); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE summary_state SET stale = ? WHERE name = ?", false, name); err != nil {
			return err
		}
	}
	return nil
}

// baseTables are the tables the summaries derive from, but events.
var baseTables = []string{"users", "user_groups", "group_members", "projects", "project_members", "project_favorites", "features", "api_tokens"}

// tableExists reports whether the store's schema has table, asking db in
// the dialect d (sqlDialect.TableExistsSQL).
func tableExists(ctx context.Context, d sqlDialect, db bun.IDB, table string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, d.TableExistsSQL(), table).Scan(&n)
	return n > 0, err
}
