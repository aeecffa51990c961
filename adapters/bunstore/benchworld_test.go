package bunstore_test

// Benchmark databases: a worldgen world loaded once per database and
// process, kept between runs, and reused while its marker says it holds the
// same world. See bench_test.go and scripts/bench-store.sh.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for the benchmark's own statements
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbstats"
	"github.com/flagadmin/flagadmin/internal/sqlitedsn"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// Environment variables of the benchmarks.
const (
	envBenchEvents   = "FLAGADMIN_BENCH_EVENTS"       // world size, default 1,000,000
	envBenchPostgres = "FLAGADMIN_BENCH_POSTGRES_DSN" // postgres://... of a server where the benchmark may create databases
	envBenchMySQL    = "FLAGADMIN_BENCH_MYSQL_DSN"    // mysql://... likewise
	envBenchSQLite   = "FLAGADMIN_BENCH_SQLITE"       // path of the SQLite benchmark file
	envBenchRebuild  = "FLAGADMIN_BENCH_REBUILD"      // "1": rebuild even when the marker matches
	envBenchDatabase = "FLAGADMIN_BENCH_DATABASE"     // name of the search benchmarks' database (PostgreSQL, MySQL), default benchDatabase
)

// benchDatabase is the database the search benchmarks read and the one the
// insert benchmark fills, both created next to the database of the DSN.
const (
	benchDatabase  = "flagadmin_storebench"
	insertDatabase = "flagadmin_storebench_insert"
	markerTable    = "worldgen_marker"
)

// benchTarget is one database system the benchmarks can run on.
type benchTarget struct {
	name string // postgres, mysql, sqlite
	env  string
}

var benchTargets = []benchTarget{
	{"postgres", envBenchPostgres},
	{"mysql", envBenchMySQL},
	{"sqlite", envBenchSQLite},
}

// benchWorld is a loaded benchmark database.
type benchWorld struct {
	world *worldgen.World
	store *bunstore.Store
	url   string // the store's database
	svc   *flagadmin.Service
	admin flagadmin.Principal
	// loadRate is events per second of the load, 0 when an existing database was reused.
	loadRate float64
}

// privateProjects returns the ids of the world's private projects: those
// a viewer who is not their member cannot see.
func (bw *benchWorld) privateProjects() []string {
	var private []string
	for _, p := range bw.world.Projects() {
		if p.Mode == flagadmin.ModePrivate {
			private = append(private, p.ID)
		}
	}
	return private
}

var (
	benchMu     sync.Mutex
	benchWorlds = map[string]*benchWorld{}
	benchConfig = sync.OnceValues(func() (worldgen.Config, error) {
		c := worldgen.Config{}
		if s := os.Getenv(envBenchEvents); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return c, fmt.Errorf("%s must be a positive integer, got %q", envBenchEvents, s)
			}
			c.Events = n
		}
		return c.WithDefaults(), nil
	})
)

// setting returns the target's setting, or skips b with how to enable it.
func (t benchTarget) setting(b *testing.B) string {
	b.Helper()
	v := os.Getenv(t.env)
	if v == "" {
		b.Skipf("set %s to run the %s benchmarks (see scripts/bench-store.sh); the first run loads a world of %s events (default 1,000,000) into it",
			t.env, t.name, envBenchEvents)
	}
	return v
}

// loadedWorld returns the target's benchmark database with the world in it,
// loading it when the database does not hold that world yet.
func loadedWorld(b *testing.B, t benchTarget) *benchWorld {
	b.Helper()
	setting := t.setting(b)
	benchMu.Lock()
	defer benchMu.Unlock()
	if bw, ok := benchWorlds[t.name]; ok {
		return bw
	}
	cfg, err := benchConfig()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	world, err := worldgen.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	dbName := benchDatabase
	if v := os.Getenv(envBenchDatabase); v != "" && t.name != "sqlite" {
		dbName = v
	}
	db, err := openBenchDB(ctx, t.name, setting, dbName)
	if err != nil {
		b.Fatalf("%s: %v", t.name, err)
	}
	bw := &benchWorld{world: world}
	fingerprint := cfg.Fingerprint()
	marker, hasMarker := db.marker(ctx)
	reuse := os.Getenv(envBenchRebuild) != "1" && hasMarker && marker.fingerprint == fingerprint
	if !reuse {
		if err := db.recreate(ctx); err != nil {
			b.Fatalf("%s: recreate the benchmark database: %v", t.name, err)
		}
	}
	bw.store, err = bunstore.Open(ctx, db.storeURL)
	if err != nil {
		b.Fatalf("%s: open: %v", t.name, err)
	}
	if reuse {
		// The marker may outlive what it describes: the schema may have
		// changed since (Open has migrated it), or the data been touched.
		schema, err := db.schemaSignature(ctx)
		if err != nil {
			b.Fatalf("%s: read the schema: %v", t.name, err)
		}
		page, err := bw.store.SearchEvents(ctx, flagadmin.EventQuery{Limit: 1})
		if schema != marker.schema || err != nil || page.Total != cfg.Events {
			fmt.Fprintf(os.Stderr, "%s: the database holds %d events (%v) and its schema changed: %t; rebuilding\n",
				t.name, page.Total, err, schema != marker.schema)
			bw.store.Close()
			reuse = false
			if err := db.recreate(ctx); err != nil {
				b.Fatalf("%s: recreate the benchmark database: %v", t.name, err)
			}
			if bw.store, err = bunstore.Open(ctx, db.storeURL); err != nil {
				b.Fatalf("%s: open: %v", t.name, err)
			}
		}
	}
	if !reuse {
		start := time.Now()
		if err := loadWorld(ctx, t.name, bw.store, world); err != nil {
			b.Fatalf("%s: load the world: %v", t.name, err)
		}
		bw.loadRate = float64(cfg.Events) / time.Since(start).Seconds()
		// The store's leaves appended first: on SQLite its appender
		// holds the writer, and ANALYZE on a connection of its own would
		// find the database locked.
		if _, err := bw.store.LogSize(ctx); err != nil {
			b.Fatalf("%s: append the leaves: %v", t.name, err)
		}
		if err := db.analyze(ctx); err != nil {
			b.Fatalf("%s: analyze: %v", t.name, err)
		}
		if err := db.setMarker(ctx, fingerprint); err != nil {
			b.Fatalf("%s: write the marker: %v", t.name, err)
		}
		fmt.Fprintf(os.Stderr, "%s: loaded %d events in %s (%.0f events/s including generation)\n",
			t.name, cfg.Events, time.Since(start).Round(time.Second), bw.loadRate)
	} else {
		fmt.Fprintf(os.Stderr, "%s: reusing the benchmark database (%s)\n", t.name, fingerprint)
	}
	db.close()
	bw.url = db.storeURL
	bw.svc = flagadmin.NewService(bw.store)
	bw.admin, err = bw.svc.Authenticate(ctx, "Bearer "+world.AdminSecret(0))
	if err != nil || !bw.admin.IsRootAdmin() {
		b.Fatalf("%s: the world's admin token does not authenticate: %v", t.name, err)
	}
	benchWorlds[t.name] = bw
	return bw
}

// loadWorld writes the world's rows and streams its events in through the bulk path.
func loadWorld(ctx context.Context, name string, store *bunstore.Store, w *worldgen.World) error {
	if err := store.Write(ctx, w.Batch()); err != nil {
		return err
	}
	total, done, last := w.Config().Events, 0, time.Now()
	for batch := range w.Events(50_000) {
		if err := store.InsertEvents(ctx, batch, 5000); err != nil {
			return err
		}
		done += len(batch)
		if time.Since(last) > 10*time.Second || done == total {
			fmt.Fprintf(os.Stderr, "%s: loaded %d of %d events\n", name, done, total)
			last = time.Now()
		}
	}
	return nil
}

// benchDB is a database/sql handle on a benchmark database, for what the
// Store does not do: creating and dropping the database, ANALYZE, the marker.
type benchDB struct {
	name     string // postgres, mysql, sqlite
	storeURL string // URL for bunstore.Open
	dbName   string // database name (server systems) or file path (sqlite)
	admin    *sql.DB
	// open returns a handle on the benchmark database itself.
	open func() (*sql.DB, error)
}

// openBenchDB prepares access to database dbName next to the one setting
// names (a DSN), or, for sqlite, to the file setting with dbName's suffix.
func openBenchDB(ctx context.Context, name, setting, dbName string) (*benchDB, error) {
	switch name {
	case "postgres":
		u, err := url.Parse(setting)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", envBenchPostgres, err)
		}
		admin, err := sql.Open("pgx", setting)
		if err != nil {
			return nil, err
		}
		bu := *u
		bu.Path = "/" + dbName
		return &benchDB{name: name, storeURL: bu.String(), dbName: dbName, admin: admin,
			open: func() (*sql.DB, error) { return sql.Open("pgx", bu.String()) }}, nil
	case "mysql":
		u, err := url.Parse(setting)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", envBenchMySQL, err)
		}
		cfg := mysql.NewConfig()
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.Net, cfg.Addr = "tcp", u.Host
		if u.Port() == "" {
			cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
		}
		cfg.DBName = strings.TrimPrefix(u.Path, "/")
		admin, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return nil, err
		}
		bu := *u
		bu.Path = "/" + dbName
		bcfg := cfg.Clone()
		bcfg.DBName = dbName
		return &benchDB{name: name, storeURL: bu.String(), dbName: dbName, admin: admin,
			open: func() (*sql.DB, error) { return sql.Open("mysql", bcfg.FormatDSN()) }}, nil
	case "sqlite":
		path := setting
		if dbName != benchDatabase {
			path = strings.TrimSuffix(setting, filepath.Ext(setting)) + "-" + dbName + filepath.Ext(setting)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		return &benchDB{name: name, storeURL: "sqlite:" + path, dbName: path,
			// A minute's wait for the lock: the store merges its text index
			// in the background once the load's writes pause, and ANALYZE
			// would otherwise find the file locked.
			open: func() (*sql.DB, error) { return sql.Open(sqliteshim.ShimName, sqlitedsn.Busy(path, time.Minute)) }}, nil
	}
	return nil, fmt.Errorf("unknown benchmark target %q", name)
}

func (d *benchDB) close() {
	if d.admin != nil {
		d.admin.Close()
	}
}

// benchMarker is what a loaded benchmark database records about itself.
type benchMarker struct {
	fingerprint string // the world's worldgen fingerprint
	schema      string // schemaSignature after the load
}

// marker returns the database's marker, and false when it has none (or
// does not exist).
func (d *benchDB) marker(ctx context.Context) (benchMarker, bool) {
	if d.name == "sqlite" {
		if _, err := os.Stat(d.dbName); err != nil {
			return benchMarker{}, false
		}
	}
	db, err := d.open()
	if err != nil {
		return benchMarker{}, false
	}
	defer db.Close()
	var m benchMarker
	err = db.QueryRowContext(ctx, "SELECT fingerprint, schema_signature FROM "+markerTable).Scan(&m.fingerprint, &m.schema)
	return m, err == nil
}

// schemaSignature returns a hash of the definitions of the database's
// tables and indexes (the marker's own table aside), so that a schema
// changed since the load is noticed.
func (d *benchDB) schemaSignature(ctx context.Context) (string, error) {
	db, err := d.open()
	if err != nil {
		return "", err
	}
	defer db.Close()
	var queries []string
	switch d.name {
	case "postgres":
		queries = []string{
			"SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position",
			"SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY tablename, indexname",
		}
	case "mysql":
		queries = []string{
			"SELECT CONCAT(table_name, '.', column_name, ' ', column_type, ' ', is_nullable) FROM information_schema.columns WHERE table_schema = DATABASE() ORDER BY table_name, ordinal_position",
			"SELECT CONCAT(table_name, '.', index_name, ' ', seq_in_index, ' ', column_name, ' ', COALESCE(sub_part, '')) FROM information_schema.statistics WHERE table_schema = DATABASE() ORDER BY table_name, index_name, seq_in_index",
		}
	default:
		queries = []string{"SELECT COALESCE(sql, name) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"}
	}
	h := sha256.New()
	for _, q := range queries {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			return "", err
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				rows.Close()
				return "", err
			}
			if !strings.Contains(line, markerTable) {
				fmt.Fprintln(h, line)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// recreate drops the database, when it exists, and creates it empty.
func (d *benchDB) recreate(ctx context.Context) error {
	switch d.name {
	case "postgres":
		if _, err := d.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+d.dbName+" WITH (FORCE)"); err != nil {
			return err
		}
		_, err := d.admin.ExecContext(ctx, "CREATE DATABASE "+d.dbName)
		return err
	case "mysql":
		if _, err := d.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+d.dbName); err != nil {
			return err
		}
		_, err := d.admin.ExecContext(ctx, "CREATE DATABASE "+d.dbName)
		return err
	default:
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(d.dbName + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	}
}

// drop removes the database.
func (d *benchDB) drop(ctx context.Context) error {
	switch d.name {
	case "postgres":
		_, err := d.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+d.dbName+" WITH (FORCE)")
		return err
	case "mysql":
		_, err := d.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+d.dbName)
		return err
	default:
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(d.dbName + suffix)
		}
		return nil
	}
}

// analyze brings the planner's statistics up to date after the load (see
// dbstats.Analyze).
func (d *benchDB) analyze(ctx context.Context) error {
	db, err := d.open()
	if err != nil {
		return err
	}
	defer db.Close()
	return dbstats.Analyze(ctx, db, d.name)
}

// setMarker records that the database holds the world of fingerprint, with
// the schema it has now.
func (d *benchDB) setMarker(ctx context.Context, fingerprint string) error {
	schema, err := d.schemaSignature(ctx)
	if err != nil {
		return err
	}
	db, err := d.open()
	if err != nil {
		return err
	}
	defer db.Close()
	for _, stmt := range []string{
		"DROP TABLE IF EXISTS " + markerTable,
		"CREATE TABLE " + markerTable + " (fingerprint VARCHAR(500) NOT NULL, schema_signature VARCHAR(64) NOT NULL, loaded_at VARCHAR(40) NOT NULL)",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	q := "INSERT INTO " + markerTable + " (fingerprint, schema_signature, loaded_at) VALUES (?, ?, ?)"
	if d.name == "postgres" {
		q = "INSERT INTO " + markerTable + " (fingerprint, schema_signature, loaded_at) VALUES ($1, $2, $3)"
	}
	_, err = db.ExecContext(ctx, q, fingerprint, schema, time.Now().UTC().Format(time.RFC3339))
	return err
}
