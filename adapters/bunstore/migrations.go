package bunstore

import (
	"context"
	"embed"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/summary"
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
// order, reporting each to o; sums are the summaries of the store that
// runs them.
func newMigrations(d sqlDialect, sums summaries, o migrateOptions) *migrate.Migrations {
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
	add("20261202180000", "drop summary_state, rebuilding first the summaries it marks out of date", func(ctx context.Context, db *bun.DB) error {
		return dropSummaryState(ctx, d, db, sums)
	})
	add("20261203090000", "index the features by lifecycle stage and project (the project list's cleanup counts)", func(ctx context.Context, db *bun.DB) error {
		return createIndex(ctx, d, db, "features_stage", "features (lifecycle_stage, project)")
	})
	add("20261204090000", "index the search texts by token, where the database has such an index (free-text search on PostgreSQL)", func(ctx context.Context, db *bun.DB) error {
		return d.TokenIndex(ctx, db)
	})
	add("20261205090000", "drop the trigram indexes of the search texts where the token index answers free text (PostgreSQL)", func(ctx context.Context, db *bun.DB) error {
		return d.DropTextTrigrams(ctx, db)
	})
	add("20261206090000", "drop the trigger that added the tokens of inserted events to the token index's vocabulary: the writer adds them (PostgreSQL)", func(ctx context.Context, db *bun.DB) error {
		return d.DropTokensTrigger(ctx, db)
	})
	add("20261207090000", "keep the range of events whose texts the full-text index lacks, which a bulk load leaves to be indexed after it (SQLite)", func(ctx context.Context, db *bun.DB) error {
		return d.PendingText(ctx, db)
	})
	add("20261208090000", "give the token index's function a body the database inlines into the index (PostgreSQL)", func(ctx context.Context, db *bun.DB) error {
		return d.InlineTokens(ctx, db)
	})
	add("20261209090000", "index the search texts by token in place of their trigrams, filled in the background (SQLite)", func(ctx context.Context, db *bun.DB) error {
		return d.TextTokens(ctx, db)
	})
	add("20261210090000", "keep each project's cleanup count with its figures (project_stats.cleanup)", func(ctx context.Context, db *bun.DB) error {
		return addCleanupCounts(ctx, d, db)
	})
	add("20261211090000", "let a follower catching up leave the token index of its events to be filled in the background (PostgreSQL)", func(ctx context.Context, db *bun.DB) error {
		return d.MarkLaterText(ctx, db)
	})
	add("20261212090000", "drop the trigger that indexed the texts of each inserted event: the writer indexes them (SQLite)", func(ctx context.Context, db *bun.DB) error {
		return d.DropTextInsertTrigger(ctx, db)
	})
	add("20261213090000", "bound the pending lists of the full-text indexes, which every search reads (PostgreSQL)", func(ctx context.Context, db *bun.DB) error {
		return d.LimitTextPending(ctx, db)
	})
	add("20261214090000", "give the full-text index each event's project, filled in the background, so that a search leaves out the projects its caller may not see from the index alone (SQLite)", func(ctx context.Context, db *bun.DB) error {
		return d.TextProjects(ctx, db)
	})
	add("20261215090000", "record the events out of creation order, so that a free-text page is read in id order from the full-text index past none of them (SQLite)", func(ctx context.Context, db *bun.DB) error {
		return d.EventOrder(ctx, db)
	})
	add("20261216090000", "count each project's events per day, so that a page at a large offset or in a range of days takes off the days of the projects its caller may not see by their counts (the summaries rebuilt)", func(ctx context.Context, db *bun.DB) error {
		return inMigrationTx(ctx, d, db, func(ctx context.Context, tx bun.IDB) error { return rebuildSummaries(ctx, d, tx, sums) })
	})
	add("20261217090000", "index the counts of comma-joined projects apart, so that a caller's hidden projects among them are found without reading every project's counts (PostgreSQL, SQLite)", func(ctx context.Context, db *bun.DB) error {
		return sums.CreateIndexes(ctx, db)
	})
	return ms
}

// createIndex creates the index name ON on (a table and its columns)
// unless the store's schema has it: MySQL has no CREATE INDEX IF NOT
// EXISTS, and an index made by a run that failed after it stays.
func createIndex(ctx context.Context, d sqlDialect, db bun.IDB, name, on string) error {
	var n int
	if err := db.QueryRowContext(ctx, d.IndexExistsSQL(), name).Scan(&n); err != nil || n > 0 {
		return err
	}
	_, err := db.ExecContext(ctx, "CREATE INDEX "+name+" ON "+on)
	return err
}

// addCleanupCounts adds project_stats.cleanup, each project's features in
// cleanup (summary.CleanupCondition), and counts them. The column is added
// unless a run that failed after adding it did (MySQL commits DDL at
// once); the counts are written again either way.
func addCleanupCounts(ctx context.Context, d sqlDialect, db *bun.DB) error {
	if !columnExists(ctx, db, "project_stats", "cleanup") {
		if _, err := db.ExecContext(ctx, "ALTER TABLE project_stats ADD COLUMN cleanup BIGINT NOT NULL DEFAULT 0"); err != nil {
			return err
		}
	}
	cleanup := summary.CleanupCondition()
	return inMigrationTx(ctx, d, db, func(ctx context.Context, tx bun.IDB) error {
		_, err := tx.ExecContext(ctx, "UPDATE project_stats SET cleanup = (SELECT COUNT(*) FROM features WHERE project = project_stats.project_id AND "+cleanup.Text+")", cleanup.Args...)
		return err
	})
}

// columnExists reports whether table has column: whether db can read it.
// It reads outside any transaction of db's (on PostgreSQL a failed
// statement ends the transaction it is in).
func columnExists(ctx context.Context, db bun.IDB, table, column string) bool {
	rows, err := db.QueryContext(ctx, "SELECT "+column+" FROM "+table+" WHERE 1 = 0")
	if err != nil {
		return false
	}
	return rows.Close() == nil
}

// dropSummaryState drops summary_state, the baseline's table of whether
// each summary is out of date, which no store reads or writes: which
// summaries a database is served with is the rule of WithoutTuning, not a
// state in the database. A summary the table marks out of date would stay
// so, unmarked: it is rebuilt first when the store that migrates keeps it;
// one it does not keep must be rebuilt (WithRebuild) before a store that
// keeps it serves the database, as after any store without it wrote.
func dropSummaryState(ctx context.Context, d sqlDialect, db *bun.DB, sums summaries) error {
	if exists, err := tableExists(ctx, d, db, "summary_state"); err != nil || !exists {
		return err // dropped already, by a run that failed after it
	}
	return inMigrationTx(ctx, d, db, func(ctx context.Context, tx bun.IDB) error {
		var stale int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM summary_state WHERE stale").Scan(&stale); err != nil {
			return err
		}
		if stale > 0 {
			if err := rebuildSummaries(ctx, d, tx, sums); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "DROP TABLE IF EXISTS summary_state")
		return err
	})
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

// tableExists reports whether the store's schema has table, asking db in
// the dialect d (sqlDialect.TableExistsSQL).
func tableExists(ctx context.Context, d sqlDialect, db bun.IDB, table string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, d.TableExistsSQL(), table).Scan(&n)
	return n > 0, err
}
