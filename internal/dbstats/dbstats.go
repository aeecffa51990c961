// Package dbstats brings a database's planner statistics up to date after
// a bulk load, as autovacuum or a periodic ANALYZE would in a running
// system: for the benchmark tools (cmd/flagadmin-bench and bunstore's
// benchmarks), whose loaded worlds must be planned as a live one would.
package dbstats

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Analyze updates the statistics of the database db is connected to;
// system is postgres, mysql or sqlite. PostgreSQL also gets a VACUUM (the
// visibility map index-only scans rely on), SQLite a WAL checkpoint.
func Analyze(ctx context.Context, db *sql.DB, system string) error {
	var stmts []string
	switch system {
	case "postgres":
		stmts = []string{"VACUUM ANALYZE"}
	case "sqlite":
		stmts = []string{"ANALYZE", "PRAGMA wal_checkpoint(TRUNCATE)"}
	case "mysql":
		tables, err := mysqlTables(ctx, db)
		if err != nil {
			return err
		}
		if len(tables) == 0 {
			return nil
		}
		stmts = []string{"ANALYZE TABLE " + strings.Join(tables, ", ")}
	default:
		return fmt.Errorf("dbstats: unknown database system %q", system)
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// mysqlTables returns the quoted names of the current database's tables.
func mysqlTables(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		tables = append(tables, "`"+t+"`")
	}
	return tables, rows.Err()
}
