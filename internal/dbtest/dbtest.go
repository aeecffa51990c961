// Package dbtest gives tests a fresh, empty database for each SQL engine
// bunstore supports, as a URL for bunstore.Open:
//
//   - SQLite: a file in the test's temporary directory, always available.
//   - PostgreSQL: a new schema in the database FLAGADMIN_TEST_POSTGRES_DSN
//     names (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable).
//   - MySQL/MariaDB: a new database on the server FLAGADMIN_TEST_MYSQL_DSN
//     names (for example mysql://root@127.0.0.1:3306/test).
//
// Without the variable, a container is started with testcontainers-go when a
// Docker provider is healthy (one per engine for the test binary, reaped when
// it exits); otherwise the test is skipped with a message saying how to enable
// it. Schemas and databases are dropped when the test ends.
//
// SQLiteFrom gives a test a copy of a SQLite database built once per test
// binary, such as a migrated one; PostgresPool and MySQLPool give the tests
// of a suite built schemas or databases, each put back as built when a test
// ends and handed to the next (Pool).
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/testcontainers/testcontainers-go"
	tcmysql "github.com/testcontainers/testcontainers-go/modules/mysql"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/flagadmin/flagadmin/internal/sqlitedsn"
)

// Environment variables naming the servers tests use.
const (
	PostgresEnv = "FLAGADMIN_TEST_POSTGRES_DSN"
	MySQLEnv    = "FLAGADMIN_TEST_MYSQL_DSN"
)

// Container images used when no server is configured.
const (
	postgresImage = "postgres:16-alpine"
	mysqlImage    = "mysql:8.4"
)

// SQLite returns the URL of a new SQLite database file in t's temporary directory.
func SQLite(t testing.TB) string {
	t.Helper()
	return "sqlite:" + filepath.Join(t.TempDir(), "flagadmin.db")
}

// SQLiteFrom returns the URL of a new SQLite database file in t's temporary
// directory holding a copy of the database build made: build runs once per
// test binary and key, on a file of its own (its URL), and must close the
// database before it returns. Tests that each need a migrated database take
// a copy this way instead of migrating one apiece: copying the file costs a
// small fraction of applying the schema.
func SQLiteFrom(t testing.TB, key string, build func(url string) error) string {
	t.Helper()
	v, _ := sqliteTemplates.LoadOrStore(key, &sqliteTemplate{})
	tmpl := v.(*sqliteTemplate)
	tmpl.once.Do(func() { tmpl.data, tmpl.err = buildSQLiteTemplate(build) })
	if tmpl.err != nil {
		t.Fatalf("dbtest: the SQLite template %q: %v", key, tmpl.err)
	}
	path := filepath.Join(t.TempDir(), "flagadmin.db")
	if err := os.WriteFile(path, tmpl.data, 0o644); err != nil {
		t.Fatalf("dbtest: copying the SQLite template %q: %v", key, err)
	}
	return "sqlite:" + path
}

// sqliteTemplates holds a *sqliteTemplate per key of SQLiteFrom.
var sqliteTemplates sync.Map

// sqliteTemplate is a database file SQLiteFrom built, kept as bytes.
type sqliteTemplate struct {
	once sync.Once
	data []byte
	err  error
}

// buildSQLiteTemplate runs build on a file in a directory of its own and
// returns the file's bytes. A database still open (a write-ahead log or a
// rollback journal left with content) is an error: its file alone would
// not hold everything build wrote.
func buildSQLiteTemplate(build func(url string) error) ([]byte, error) {
	dir, err := os.MkdirTemp("", "dbtest-sqlite-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "template.db")
	if err := build("sqlite:" + path); err != nil {
		return nil, err
	}
	for _, suffix := range []string{"-wal", "-journal"} {
		if st, err := os.Stat(path + suffix); err == nil && st.Size() > 0 {
			return nil, fmt.Errorf("build left %d bytes in %s: close the database before returning", st.Size(), filepath.Base(path+suffix))
		}
	}
	return os.ReadFile(path)
}

// Postgres returns the URL of a new, empty schema (first on the search_path)
// in the PostgreSQL database of FLAGADMIN_TEST_POSTGRES_DSN, or of a
// container; the schema is dropped when t ends. It skips t when neither is
// available.
func Postgres(t testing.TB) string {
	t.Helper()
	dsn := postgresDSN(t)
	admin := openAdmin(t, "pgx", dsn, PostgresEnv)
	schema := createSchema(t, admin)
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dbtest: drop schema %s: %v", schema, err)
		}
		admin.Close()
	})
	return postgresURL(t, dsn, schema)
}

// postgresDSN returns FLAGADMIN_TEST_POSTGRES_DSN, or the URL of a
// container; it skips t when neither is available.
func postgresDSN(t testing.TB) string {
	t.Helper()
	if dsn := os.Getenv(PostgresEnv); dsn != "" {
		return dsn
	}
	return postgresContainer.get(t, PostgresEnv, "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", startPostgres)
}

// createSchema creates a new, empty schema with admin and returns its name.
func createSchema(t testing.TB, admin *sql.DB) string {
	t.Helper()
	ctx := context.Background()
	// pg_trgm goes in public once for the database, so that no test schema
	// owns it (dropping that schema would drop it for everyone). A
	// concurrent creation may fail; the extension then exists all the same.
	_, _ = admin.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
	schema := "t_" + randomHex(t)
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("dbtest: create schema %s: %v", schema, err)
	}
	return schema
}

// postgresURL returns dsn with schema first on its search_path.
func postgresURL(t testing.TB, dsn, schema string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("dbtest: %s is not a URL: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// MySQL returns the URL of a new, empty database on the MySQL or MariaDB
// server of FLAGADMIN_TEST_MYSQL_DSN, or of a container; the database is
// dropped when t ends. It skips t when neither is available.
func MySQL(t testing.TB) string {
	t.Helper()
	u := mysqlServer(t)
	admin := openAdmin(t, "mysql", mysqlDSN(u), MySQLEnv)
	name := createDatabase(t, admin)
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name); err != nil {
			t.Errorf("dbtest: drop database %s: %v", name, err)
		}
		admin.Close()
	})
	u.Path = "/" + name
	return u.String()
}

// mysqlServer returns the URL of FLAGADMIN_TEST_MYSQL_DSN, or of a
// container; it skips t when neither is available.
func mysqlServer(t testing.TB) *url.URL {
	t.Helper()
	rawURL := os.Getenv(MySQLEnv)
	if rawURL == "" {
		rawURL = mysqlContainer.get(t, MySQLEnv, "mysql://root@127.0.0.1:3306/test", startMySQL)
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "mysql" {
		t.Fatalf("dbtest: %s must be a URL like mysql://user:pass@host:3306/db", MySQLEnv)
	}
	return u
}

// createDatabase creates a new, empty database with admin and returns its name.
func createDatabase(t testing.TB, admin *sql.DB) string {
	t.Helper()
	name := "t_" + randomHex(t)
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name+" CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("dbtest: create database %s: %v", name, err)
	}
	return name
}

// Raw opens the database of dbURL (a URL of this package's) with its
// driver, apart from any store: what someone who writes the database
// directly uses. It is closed when t ends.
func Raw(t testing.TB, dbURL string) *sql.DB {
	t.Helper()
	db := sql.OpenDB(Connector(t, dbURL))
	t.Cleanup(func() { db.Close() })
	return db
}

// Connector returns the connector Raw opens its pool with: the database
// of dbURL, with its driver, for a test that wraps the driver's
// connections.
func Connector(t testing.TB, dbURL string) driver.Connector {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("dbtest: %q: %v", dbURL, err)
	}
	var c driver.Connector
	switch u.Scheme {
	case "sqlite":
		path := strings.TrimPrefix(dbURL, "sqlite:")
		if path == ":memory:" {
			t.Fatalf("dbtest: %q: an in-memory database has no other connection", dbURL)
		}
		c = dsnConnector{dsn: sqlitedsn.Busy(path, 10*time.Second), driver: sqliteshim.Driver()}
	case "postgres", "postgresql":
		c, err = stdlib.GetDefaultDriver().(driver.DriverContext).OpenConnector(dbURL)
	case "mysql":
		c, err = mysql.MySQLDriver{}.OpenConnector(mysqlDSN(u))
	default:
		t.Fatalf("dbtest: %q: not a database URL of this package", dbURL)
	}
	if err != nil {
		t.Fatalf("dbtest: %q: %v", dbURL, err)
	}
	return c
}

// dsnConnector opens connections by the driver's name for them, for a
// driver without connectors of its own (SQLite's).
type dsnConnector struct {
	dsn    string
	driver driver.Driver
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.driver.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.driver }

// mysqlDSN turns mysql://user:pass@host:port/db into the driver's DSN. It
// is not bunstore.MySQLConfig because bunstore's own tests import this
// package.
func mysqlDSN(u *url.URL) string {
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	return cfg.FormatDSN()
}

// openAdmin connects to the server tests create their databases on. A
// server configured by env that cannot be reached fails the test: it was
// asked for.
func openAdmin(t testing.TB, driverName, dsn, env string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatalf("dbtest: %s: %v", env, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		t.Fatalf("dbtest: cannot reach the server of %s: %v", env, err)
	}
	return db
}

func randomHex(t testing.TB) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// container starts one database container for the test binary, on first use.
type container struct {
	once sync.Once
	url  string
	skip string
	err  error
}

var (
	postgresContainer container
	mysqlContainer    container
)

// get returns the URL of the container start creates, or skips t with how
// to enable the tests when there is no Docker provider.
func (c *container) get(t testing.TB, env, example string, start func(context.Context) (string, error)) string {
	t.Helper()
	c.once.Do(func() {
		if err := dockerHealthy(); err != nil {
			c.skip = fmt.Sprintf("no database for this test: set %s (for example %s) or start a Docker engine for testcontainers (%v)", env, example, err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		c.url, c.err = start(ctx)
	})
	switch {
	case c.skip != "":
		t.Skip(c.skip)
	case c.err != nil:
		t.Fatalf("dbtest: starting a container: %v", c.err)
	}
	return c.url
}

// dockerHealthy reports whether testcontainers can reach a Docker provider
// (the check of testcontainers.SkipIfProviderIsNotHealthy, with our message).
func dockerHealthy() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("docker provider: %v", r)
		}
	}()
	provider, err := testcontainers.ProviderDocker.GetProvider()
	if err != nil {
		return err
	}
	defer provider.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return provider.Health(ctx)
}

func startPostgres(ctx context.Context) (string, error) {
	c, err := tcpostgres.Run(ctx, postgresImage,
		tcpostgres.WithDatabase("test"), tcpostgres.WithUsername("postgres"), tcpostgres.WithPassword("postgres"),
		tcpostgres.BasicWaitStrategies())
	if err != nil {
		return "", err
	}
	return c.ConnectionString(ctx, "sslmode=disable")
}

func startMySQL(ctx context.Context) (string, error) {
	c, err := tcmysql.Run(ctx, mysqlImage,
		tcmysql.WithDatabase("test"), tcmysql.WithUsername("root"), tcmysql.WithPassword("test"))
	if err != nil {
		return "", err
	}
	endpoint, err := c.PortEndpoint(ctx, "3306/tcp", "")
	if err != nil {
		return "", err
	}
	return "mysql://root:test@" + endpoint + "/test", nil
}
