package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for the tool's own statements
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbstats"
	"github.com/flagadmin/flagadmin/internal/sqlitedsn"
)

// memoryDB is the --db value of the in-memory store.
const memoryDB = "memory:"

// markerTable records, inside a benchmark database, which world it holds
// (the worldgen fingerprint) and whether loading it finished.
const markerTable = "flagadmin_bench_world"

// Marker states.
const (
	markerBuilding = "building"
	markerReady    = "ready"
)

// database is the --db the world lives in, with what the tool needs besides
// the Store: creating, dropping and analyzing the database, and the marker.
type database struct {
	// URL is the --db value, what bunstore.Open (or memstore) takes.
	URL string
	// System is postgres, mysql, sqlite or memory.
	System string
	// Persistent: the database outlives the process (not memory: or sqlite::memory:).
	Persistent bool
	// name is the database name (postgres, mysql) or the file path (sqlite).
	name string
	// template, when set, is the database a missing postgres database is
	// created as a copy of (--world-from).
	template string
	// openSelf and openServer return handles on the database itself and on
	// its server's maintenance database (postgres, mysql).
	openSelf, openServer func() (*sql.DB, error)
}

// parseDatabase recognizes a --db value.
func parseDatabase(raw string) (*database, error) {
	raw = strings.TrimSpace(raw)
	scheme, _, _ := strings.Cut(raw, ":")
	switch strings.ToLower(scheme) {
	case "memory":
		if raw != memoryDB {
			return nil, fmt.Errorf("--db: want memory: for the in-memory store, got %q", raw)
		}
		return &database{URL: raw, System: "memory"}, nil
	case "sqlite":
		path := strings.TrimPrefix(raw[len(scheme):], ":")
		if path == ":memory:" {
			return &database{URL: raw, System: "sqlite"}, nil
		}
		if p, ok := strings.CutPrefix(path, "//"); ok {
			path = p
		}
		if path == "" || strings.ContainsAny(path, "?#") {
			return nil, fmt.Errorf("--db: want sqlite:PATH, got %q", raw)
		}
		return &database{URL: raw, System: "sqlite", Persistent: true, name: path,
			openSelf: func() (*sql.DB, error) {
				return sql.Open(sqliteshim.ShimName, sqlitedsn.Busy(path, 10*time.Second))
			}}, nil
	case "postgres", "postgresql":
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("--db: invalid postgres URL %s", bunstore.RedactURL(raw))
		}
		name := strings.TrimPrefix(u.Path, "/")
		if name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("--db: the postgres URL %s must name a database (postgres://user@host:port/NAME)", bunstore.RedactURL(raw))
		}
		server := *u
		server.Path = "/postgres"
		return &database{URL: raw, System: "postgres", Persistent: true, name: name,
			openSelf:   func() (*sql.DB, error) { return sql.Open("pgx", raw) },
			openServer: func() (*sql.DB, error) { return sql.Open("pgx", server.String()) }}, nil
	case "mysql":
		cfg, err := bunstore.MySQLConfig(raw)
		if err != nil {
			return nil, fmt.Errorf("--db: %w", err)
		}
		server := cfg.Clone()
		server.DBName = ""
		return &database{URL: raw, System: "mysql", Persistent: true, name: cfg.DBName,
			openSelf:   func() (*sql.DB, error) { return sql.Open("mysql", cfg.FormatDSN()) },
			openServer: func() (*sql.DB, error) { return sql.Open("mysql", server.FormatDSN()) }}, nil
	}
	return nil, fmt.Errorf("--db: unsupported URL %s; use postgres://..., mysql://..., sqlite:PATH or memory:", bunstore.RedactURL(raw))
}

// openStore opens the store of a --db URL: a new memstore for memory:,
// else a bunstore, migrated. The returned function closes it.
func openStore(ctx context.Context, dbURL string, opts ...bunstore.Option) (flagadmin.Store, func() error, error) {
	if dbURL == memoryDB {
		return memstore.New(), func() error { return nil }, nil
	}
	s, err := bunstore.Open(ctx, dbURL, opts...)
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// ensureExists creates the database when its server does not have it yet
// (postgres, mysql; on postgres as a copy of d.template when set), and the
// directory of a SQLite file.
func (d *database) ensureExists(ctx context.Context) error {
	switch d.System {
	case "sqlite":
		return os.MkdirAll(filepath.Dir(d.name), 0o755)
	case "postgres":
		self, err := d.openSelf()
		if err != nil {
			return err
		}
		err = self.PingContext(ctx)
		self.Close()
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
			return err
		}
		create := "CREATE DATABASE " + pgx.Identifier{d.name}.Sanitize()
		if d.template != "" {
			create += " TEMPLATE " + pgx.Identifier{d.template}.Sanitize()
		}
		return d.onServer(ctx, create)
	case "mysql":
		return d.onServer(ctx, "CREATE DATABASE IF NOT EXISTS `"+strings.ReplaceAll(d.name, "`", "``")+"`")
	}
	return nil
}

// recreate drops the database and creates it empty.
func (d *database) recreate(ctx context.Context) error {
	switch d.System {
	case "sqlite":
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(d.name + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	case "postgres":
		id := pgx.Identifier{d.name}.Sanitize()
		return d.onServer(ctx, "DROP DATABASE IF EXISTS "+id+" WITH (FORCE)", "CREATE DATABASE "+id)
	case "mysql":
		id := "`" + strings.ReplaceAll(d.name, "`", "``") + "`"
		return d.onServer(ctx, "DROP DATABASE IF EXISTS "+id, "CREATE DATABASE "+id)
	}
	return nil
}

// onServer runs statements on the server's maintenance database.
func (d *database) onServer(ctx context.Context, stmts ...string) error {
	db, err := d.openServer()
	if err != nil {
		return err
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// dbState is what a database holds before the world is loaded.
type dbState struct {
	// Tables counts the tables of the database (or of the current schema).
	Tables int
	// Fingerprint, State and Schema are those of the marker; "" without one.
	Fingerprint, State, Schema string
}

// inspect reports whether the database is empty and which world its marker names.
func (d *database) inspect(ctx context.Context) (dbState, error) {
	var st dbState
	if d.System == "sqlite" {
		if _, err := os.Stat(d.name); errors.Is(err, os.ErrNotExist) {
			return st, nil
		}
	}
	db, err := d.openSelf()
	if err != nil {
		return st, err
	}
	defer db.Close()
	q := map[string]string{
		"postgres": "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
		"mysql":    "SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE()",
		"sqlite":   "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
	}[d.System]
	if err := db.QueryRowContext(ctx, q).Scan(&st.Tables); err != nil {
		return st, err
	}
	// A missing marker table is no marker: the error is expected then.
	err = db.QueryRowContext(ctx, "SELECT fingerprint, state, schema_hash FROM "+markerTable).Scan(&st.Fingerprint, &st.State, &st.Schema)
	if err != nil {
		// No marker, or one written by an older version of this tool.
		var n int
		if db.QueryRowContext(ctx, "SELECT count(*) FROM "+markerTable).Scan(&n) == nil {
			st.Fingerprint, st.State, st.Schema = "an older flagadmin-bench marker", "", ""
		}
	}
	return st, nil
}

// schemaQueries list the definitions of a database's tables, columns,
// indexes, triggers and functions, one per row, leaving out the marker.
var schemaQueries = map[string]string{
	"postgres": `SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') || ' ' || coalesce(is_identity, '')
			FROM information_schema.columns WHERE table_schema = current_schema() AND table_name <> '` + markerTable + `'
		UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename <> '` + markerTable + `'
		UNION ALL SELECT 'trigger ' || pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT t.tgisinternal AND n.nspname = current_schema()
		UNION ALL SELECT 'function ' || p.proname || ' ' || md5(coalesce(p.prosrc, '')) FROM pg_proc p
			JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema()`,
	"sqlite": `SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master
		WHERE name <> '` + markerTable + `' AND name NOT LIKE 'sqlite_%'`,
	"mysql": `SELECT CONCAT('column ', table_name, '.', column_name, ' ', column_type, ' ', is_nullable, ' ', coalesce(column_default, ''), ' ', extra)
			FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name <> '` + markerTable + `'
		UNION ALL SELECT CONCAT('index ', table_name, '.', index_name, ' ', seq_in_index, ' ', column_name, ' ', non_unique)
			FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name <> '` + markerTable + `'
		UNION ALL SELECT CONCAT('trigger ', trigger_name, ' ', action_timing, ' ', event_manipulation, ' ', event_object_table, ' ', MD5(action_statement))
			FROM information_schema.triggers WHERE trigger_schema = DATABASE()`,
}

// schemaHash returns a digest of the database's schema (schemaQueries):
// equal digests mean the store created the same tables, indexes, triggers
// and functions.
func (d *database) schemaHash(ctx context.Context) (string, error) {
	db, err := d.openSelf()
	if err != nil {
		return "", err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, schemaQueries[d.System])
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var defs []string
	for rows.Next() {
		var def string
		if err := rows.Scan(&def); err != nil {
			return "", err
		}
		defs = append(defs, def)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	slices.Sort(defs)
	sum := sha256.Sum256([]byte(strings.Join(defs, "\n")))
	return hex.EncodeToString(sum[:8]), nil
}

// freshSchemaHash returns the schemaHash of the schema this build of the
// store creates, in a scratch database next to d (a temporary file for
// SQLite) that it drops afterwards. A world loaded under another schema
// (a migration added or changed since) is stale.
func (d *database) freshSchemaHash(ctx context.Context) (string, error) {
	scratch, err := d.scratch()
	if err != nil {
		return "", err
	}
	if err := scratch.recreate(ctx); err != nil {
		return "", err
	}
	defer scratch.drop(context.WithoutCancel(ctx))
	s, err := bunstore.Open(ctx, scratch.URL)
	if err != nil {
		return "", err
	}
	if err := s.Close(); err != nil {
		return "", err
	}
	return scratch.schemaHash(ctx)
}

// runCopy returns a fresh copy of d for one run, so the run's writes
// (lifecycle completions) never reach the world: PostgreSQL clones the
// database (CREATE DATABASE ... TEMPLATE), SQLite copies the file. MySQL
// has no cheap copy: ok is false and the run uses d itself.
func (d *database) runCopy(ctx context.Context) (cp *database, ok bool, err error) {
	switch d.System {
	case "postgres":
		u, err := url.Parse(d.URL)
		if err != nil {
			return nil, false, err
		}
		u.Path = "/" + d.name + "_run"
		cp, err := parseDatabase(u.String())
		if err != nil {
			return nil, false, err
		}
		if err := cp.drop(ctx); err != nil {
			return nil, false, err
		}
		err = d.onServer(ctx, "CREATE DATABASE "+pgx.Identifier{cp.name}.Sanitize()+" TEMPLATE "+pgx.Identifier{d.name}.Sanitize())
		return cp, err == nil, err
	case "sqlite":
		ext := filepath.Ext(d.name)
		cp, err := parseDatabase("sqlite:" + strings.TrimSuffix(d.name, ext) + "-run" + ext)
		if err != nil {
			return nil, false, err
		}
		if err := cp.drop(ctx); err != nil {
			return nil, false, err
		}
		for _, suffix := range []string{"", "-wal"} {
			if err := copyFile(d.name+suffix, cp.name+suffix); err != nil && !(suffix != "" && errors.Is(err, os.ErrNotExist)) {
				return nil, false, err
			}
		}
		return cp, true, nil
	}
	return d, false, nil
}

// copyFile copies the file src to dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// scratch returns a database beside d for a schema probe.
func (d *database) scratch() (*database, error) {
	suffix := fmt.Sprintf("_schema_probe_%d", os.Getpid())
	switch d.System {
	case "sqlite":
		return parseDatabase("sqlite:" + filepath.Join(os.TempDir(), "flagadmin-bench"+suffix+".db"))
	case "postgres", "mysql":
		u, err := url.Parse(d.URL)
		if err != nil {
			return nil, err
		}
		u.Path = "/" + d.name + suffix
		return parseDatabase(u.String())
	}
	return nil, fmt.Errorf("no scratch database for %s", d.System)
}

// drop removes the database.
func (d *database) drop(ctx context.Context) error {
	switch d.System {
	case "postgres":
		return d.onServer(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.name}.Sanitize()+" WITH (FORCE)")
	case "mysql":
		return d.onServer(ctx, "DROP DATABASE IF EXISTS `"+strings.ReplaceAll(d.name, "`", "``")+"`")
	}
	return d.recreate(ctx) // sqlite: removes the files
}

// setMarker records that the database holds (state ready) or is being
// loaded with (state building) the world of fingerprint, under the schema
// whose schemaHash is schema.
func (d *database) setMarker(ctx context.Context, fingerprint, state, schema string) error {
	db, err := d.openSelf()
	if err != nil {
		return err
	}
	defer db.Close()
	insert := "INSERT INTO " + markerTable + " (fingerprint, state, schema_hash, updated_at) VALUES (?, ?, ?, ?)"
	if d.System == "postgres" {
		insert = "INSERT INTO " + markerTable + " (fingerprint, state, schema_hash, updated_at) VALUES ($1, $2, $3, $4)"
	}
	for _, s := range []string{
		"CREATE TABLE IF NOT EXISTS " + markerTable + " (fingerprint VARCHAR(500) NOT NULL, state VARCHAR(20) NOT NULL, schema_hash VARCHAR(64) NOT NULL, updated_at VARCHAR(40) NOT NULL)",
		"DELETE FROM " + markerTable,
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	_, err = db.ExecContext(ctx, insert, fingerprint, state, schema, time.Now().UTC().Format(time.RFC3339))
	return err
}

// analyze brings the planner's statistics up to date after a load, as
// autovacuum or a periodic ANALYZE would in a running system. PostgreSQL
// also gets a VACUUM (the visibility map index-only scans rely on), SQLite
// a WAL checkpoint.
func (d *database) analyze(ctx context.Context) error {
	if !d.Persistent {
		return nil
	}
	db, err := d.openSelf()
	if err != nil {
		return err
	}
	defer db.Close()
	return dbstats.Analyze(ctx, db, d.System)
}

// version returns the database server's version, "" when unknown.
func (d *database) version(ctx context.Context) string {
	if d.System == "memory" {
		return "memstore"
	}
	if d.openSelf == nil {
		return ""
	}
	db, err := d.openSelf()
	if err != nil {
		return ""
	}
	defer db.Close()
	q := map[string]string{"postgres": "SELECT version()", "mysql": "SELECT VERSION()", "sqlite": "SELECT 'SQLite ' || sqlite_version()"}[d.System]
	var v string
	if err := db.QueryRowContext(ctx, q).Scan(&v); err != nil {
		return ""
	}
	return v
}
