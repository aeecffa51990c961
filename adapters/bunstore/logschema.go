package bunstore

import (
	"context"

	"github.com/uptrace/bun"
)

// logMigration is the name of the migration that adds the verifiable log
// and its retention: the tables of schema/log-*.sql.
const logMigration = "20261127000001"

// migrateLog is the log's migration: the tables, created if missing, so
// it may run again. The leaves of the events a database holds are made
// by the migration to leaf format v1 (leafv1.go), which rebuilds every
// leaf: a leaf commits to its event's salt, which this migration has no
// column for. (It first made leaves of the format before v1, which that
// migration replaces.)
func migrateLog(ctx context.Context, db *bun.DB) error {
	stmts, err := schemaStatements(ctx, db, "log-")
	if err != nil {
		return err
	}
	return inMigrationTx(ctx, db, func(ctx context.Context, tx bun.IDB) error { return execAll(ctx, tx, stmts) })
}

// logSizeMigration is the name of the migration that drops log_state: the
// log's size is read from its leaves since (schema/logsize-*.sql).
const logSizeMigration = "20261127000003"

// migrateLogSize is the migration logSizeMigration; its statements may
// run again.
func migrateLogSize(ctx context.Context, db *bun.DB) error {
	stmts, err := schemaStatements(ctx, db, "logsize-")
	if err != nil {
		return err
	}
	return inMigrationTx(ctx, db, func(ctx context.Context, tx bun.IDB) error { return execAll(ctx, tx, stmts) })
}
