package dbtest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Pool hands tests PostgreSQL schemas or MySQL databases that one build
// made (such as a migrated store), and reuses them: when a test ends, its
// database is put back as build left it, and the next test gets it. A
// database is built only when none is free, so a suite whose tests run
// one after another builds one, however many tests it has: the contract
// suites open hundreds of stores, and building one (migrating it) costs
// about a second on a server, putting it back a small fraction of that.
//
// Putting a database back means: every table holds again exactly the
// rows it held after build (the tables that changed are emptied, and the
// rows build left are copied back from a reference copy taken once), and
// every sequence (PostgreSQL) or AUTO_INCREMENT counter (MySQL) is where
// build left it, so ids start where they start on a fresh database.
// Tables are emptied with DELETE, not TRUNCATE: on PostgreSQL, TRUNCATE
// gives every table and index a new file and makes the commit wait for
// the disk, several times what deleting a test's few rows costs. The
// rows deleted stay as dead versions until a VACUUM, which the server
// may never run on its own (autovacuum off), so a PostgreSQL database is
// vacuumed after every vacuumAfter rows deleted.
// Triggers do not fire while the rows are restored: the rows are restored
// as they were, not written again. MySQL cannot switch triggers off, so
// there a database whose build made triggers is not reused. A test that
// changed the schema itself (a relation created or dropped) gets a
// database nobody reuses: it is dropped.
//
// Only tests that change a database through its rows may take theirs from
// a Pool; a test of the migrations or of the schema takes a fresh database
// (Postgres, MySQL). Every database of the Pool is dropped when the test
// that made it ends.
type Pool struct {
	engine engine
	build  func(url string) error

	mu     sync.Mutex
	server string  // the server's URL, once a test asked for a database
	admin  *sql.DB // its connection pool, creating and dropping databases
	idle   []string
	ref    *reference       // what build left, once a database was built
	dead   map[string]int64 // rows deleted in each database since its last vacuum
}

// vacuumAfter is how many rows a Pool deletes in one of its databases
// between two vacuums of it: a contract suite deletes tens of thousands,
// and a vacuum of tables this small takes milliseconds.
const vacuumAfter = 10_000

// engine is what a Pool does differently on each server.
type engine interface {
	// server returns the server's URL (skipping t when there is none),
	// the driver and DSN of its administrative connection.
	server(t testing.TB) (rawURL, driver, dsn string)
	create(t testing.TB, admin *sql.DB) string
	url(t testing.TB, rawURL, name string) string
	drop(ctx context.Context, admin *sql.DB, name string) error
	snapshot(ctx context.Context, admin *sql.DB, name, refName string) (*reference, error)
	// reset puts name back as build left it and returns how many rows
	// it deleted.
	reset(ctx context.Context, admin *sql.DB, name string, ref *reference) (deleted int64, err error)
	// vacuum clears what deleted rows left in name's tables.
	vacuum(ctx context.Context, admin *sql.DB, name string, ref *reference) error
}

// reference is what build left in a database: a copy of the rows of
// every table that had some, in a database of its own, and the counters.
type reference struct {
	name      string           // the schema or database holding the copies
	tables    []string         // every table build made
	seeded    []string         // those holding rows, copied to name
	relations int              // how many relations build made
	triggers  int              // MySQL: how many triggers build made
	counters  map[string]int64 // PostgreSQL: last_value of each sequence; MySQL: AUTO_INCREMENT of each table
	called    map[string]bool  // PostgreSQL: is_called of each sequence
}

// PostgresPool returns a Pool of schemas in the database of
// FLAGADMIN_TEST_POSTGRES_DSN (or a container), each made by build: URL
// gives a test one. The schemas are dropped when t ends.
func PostgresPool(t testing.TB, build func(url string) error) *Pool {
	return newPool(t, postgresEngine{}, build)
}

// MySQLPool returns a Pool of databases on the server of
// FLAGADMIN_TEST_MYSQL_DSN (or a container), each made by build: URL
// gives a test one. The databases are dropped when t ends.
func MySQLPool(t testing.TB, build func(url string) error) *Pool {
	return newPool(t, mysqlEngine{}, build)
}

func newPool(t testing.TB, e engine, build func(url string) error) *Pool {
	p := &Pool{engine: e, build: build, dead: map[string]int64{}}
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.admin == nil {
			return
		}
		names := p.idle
		if p.ref != nil {
			names = append(names, p.ref.name)
		}
		for _, name := range names {
			if err := p.engine.drop(context.Background(), p.admin, name); err != nil {
				t.Errorf("dbtest: drop %s: %v", name, err)
			}
		}
		p.admin.Close()
	})
	return p
}

// URL returns the URL of a database of the pool, as build left it, for t
// alone: when t ends, it is put back for the next test. It skips t when
// there is no server (as Postgres and MySQL do).
func (p *Pool) URL(t testing.TB) string {
	t.Helper()
	name := p.idleDatabase(t)
	if name == "" {
		name = p.make(t)
	}
	t.Cleanup(func() { p.put(t, name) })
	return p.engine.url(t, p.server, name)
}

// idleDatabase connects the pool to its server on first use and takes an
// idle database from it ("" when none is idle). Skipping t (no server) or
// failing it ends t's goroutine: the lock is released by defer, or every
// later test of the pool would wait for it for ever.
func (p *Pool) idleDatabase(t testing.TB) string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.admin == nil {
		rawURL, driver, dsn := p.engine.server(t) // may skip t
		p.server, p.admin = rawURL, openAdmin(t, driver, dsn, "the pool's server")
	}
	var name string
	if n := len(p.idle); n > 0 {
		name, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	return name
}

// make creates a database, runs build on it and, for the pool's first,
// takes the reference copy of what build left.
func (p *Pool) make(t testing.TB) string {
	t.Helper()
	name := p.engine.create(t, p.admin)
	if err := p.build(p.engine.url(t, p.server, name)); err != nil {
		_ = p.engine.drop(context.Background(), p.admin, name)
		t.Fatalf("dbtest: building %s: %v", name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ref == nil {
		refName := p.engine.create(t, p.admin)
		ref, err := p.engine.snapshot(context.Background(), p.admin, name, refName)
		if err != nil {
			_ = p.engine.drop(context.Background(), p.admin, refName)
			_ = p.engine.drop(context.Background(), p.admin, name)
			t.Fatalf("dbtest: copying what build left in %s: %v", name, err)
		}
		p.ref = ref
	}
	return name
}

// put puts the database name back as build left it (vacuuming it when
// due) and returns it to the pool; one that cannot be put back is dropped.
func (p *Pool) put(t testing.TB, name string) {
	ctx := context.Background()
	if err := p.clean(ctx, name); err != nil {
		t.Logf("dbtest: %s is not reused: %v", name, err)
		if err := p.engine.drop(ctx, p.admin, name); err != nil {
			t.Errorf("dbtest: drop %s: %v", name, err)
		}
		return
	}
	p.mu.Lock()
	p.idle = append(p.idle, name)
	p.mu.Unlock()
}

// clean resets name and vacuums it once vacuumAfter rows were deleted in
// it since its last vacuum. Only the test that holds name uses it, so
// its entry of p.dead is that test's alone until put returns it.
func (p *Pool) clean(ctx context.Context, name string) error {
	deleted, err := p.engine.reset(ctx, p.admin, name, p.ref)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.dead[name] += deleted
	due := p.dead[name] >= vacuumAfter
	if due {
		p.dead[name] = 0
	}
	p.mu.Unlock()
	if due {
		return p.engine.vacuum(ctx, p.admin, name, p.ref)
	}
	return nil
}

// errSchemaChanged: the test changed the schema, so the database is not
// what build left even with its rows restored.
var errSchemaChanged = errors.New("the test changed the schema")

// postgresEngine keeps a Pool's databases as schemas.
type postgresEngine struct{}

func (postgresEngine) server(t testing.TB) (string, string, string) {
	dsn := postgresDSN(t)
	return dsn, "pgx", dsn
}

func (postgresEngine) create(t testing.TB, admin *sql.DB) string { return createSchema(t, admin) }

func (postgresEngine) url(t testing.TB, dsn, name string) string { return postgresURL(t, dsn, name) }

func (postgresEngine) drop(ctx context.Context, admin *sql.DB, name string) error {
	_, err := admin.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+name+" CASCADE")
	return err
}

// pgRelationCount counts the relations (tables, indexes, sequences, views)
// of schema.
const pgRelationCount = "SELECT COUNT(*) FROM pg_class WHERE relnamespace = $1::regnamespace"

func (postgresEngine) snapshot(ctx context.Context, admin *sql.DB, name, refName string) (*reference, error) {
	ref := &reference{name: refName, counters: map[string]int64{}, called: map[string]bool{}}
	if err := admin.QueryRowContext(ctx, pgRelationCount, name).Scan(&ref.relations); err != nil {
		return nil, err
	}
	var err error
	ref.tables, err = queryStrings(ctx, admin,
		"SELECT relname FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind = 'r' ORDER BY relname", name)
	if err != nil {
		return nil, err
	}
	seqs, err := queryStrings(ctx, admin,
		"SELECT relname FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind = 'S' ORDER BY relname", name)
	if err != nil {
		return nil, err
	}
	for _, s := range seqs {
		var v int64
		var called bool
		if err := admin.QueryRowContext(ctx, "SELECT last_value, is_called FROM "+name+"."+s).Scan(&v, &called); err != nil {
			return nil, err
		}
		ref.counters[s], ref.called[s] = v, called
	}
	if ref.seeded, err = copySeeded(ctx, admin, "", name, refName, ref.tables); err != nil {
		return nil, err
	}
	return ref, nil
}

func (postgresEngine) reset(ctx context.Context, admin *sql.DB, name string, ref *reference) (int64, error) {
	var relations int
	if err := admin.QueryRowContext(ctx, pgRelationCount, name).Scan(&relations); err != nil {
		return 0, err
	}
	if relations != ref.relations {
		return 0, fmt.Errorf("%w: %d relations, build made %d", errSchemaChanged, relations, ref.relations)
	}
	changed, err := nonEmpty(ctx, admin, "", name, ref.tables)
	if err != nil {
		return 0, err
	}
	tx, err := admin.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	// A connection the test left open holding a lock fails the reset
	// rather than hanging it. Foreign keys are triggers, off with the
	// others, so the tables are emptied in any order. The commit need
	// not wait for the disk: what a crash of the server could lose is
	// this reset, and the tests that were running on it fail anyway.
	for _, stmt := range []string{"SET LOCAL lock_timeout = '10s'", "SET LOCAL session_replication_role = replica", "SET LOCAL synchronous_commit = off"} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return 0, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	var deleted int64
	for _, tbl := range changed {
		res, err := tx.ExecContext(ctx, "DELETE FROM "+name+"."+tbl)
		if err != nil {
			return 0, fmt.Errorf("DELETE FROM %s.%s: %w", name, tbl, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		deleted += n
	}
	var stmts []string
	for _, tbl := range ref.seeded {
		stmts = append(stmts, "INSERT INTO "+name+"."+tbl+" SELECT * FROM "+ref.name+"."+tbl)
	}
	if len(ref.counters) > 0 {
		var setvals []string
		for seq, v := range ref.counters {
			setvals = append(setvals, fmt.Sprintf("setval('%s.%s', %d, %t)", name, seq, v, ref.called[seq]))
		}
		stmts = append(stmts, "SELECT "+strings.Join(setvals, ", "))
	}
	for _, stmt := range stmts {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return 0, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return deleted, tx.Commit()
}

func (postgresEngine) vacuum(ctx context.Context, admin *sql.DB, name string, ref *reference) error {
	if len(ref.tables) == 0 {
		return nil
	}
	_, err := admin.ExecContext(ctx, "VACUUM "+qualified(name, ref.tables))
	return err
}

// mysqlEngine keeps a Pool's databases as databases.
type mysqlEngine struct{}

func (mysqlEngine) server(t testing.TB) (string, string, string) {
	u := mysqlServer(t)
	return u.String(), "mysql", mysqlDSN(u)
}

func (mysqlEngine) create(t testing.TB, admin *sql.DB) string { return createDatabase(t, admin) }

func (mysqlEngine) url(t testing.TB, rawURL, name string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("dbtest: %s is not a URL: %v", MySQLEnv, err)
	}
	u.Path = "/" + name
	return u.String()
}

func (mysqlEngine) drop(ctx context.Context, admin *sql.DB, name string) error {
	_, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
	return err
}

// mysqlCounters reads the AUTO_INCREMENT counter of every table of a
// database that has one, and how many tables it has. MySQL 8 caches the
// figures of information_schema.TABLES unless told not to; MariaDB knows
// no such setting and reads them live.
func mysqlCounters(ctx context.Context, conn *sql.Conn, name string) (map[string]int64, int, error) {
	_, _ = conn.ExecContext(ctx, "SET SESSION information_schema_stats_expiry = 0")
	rows, err := conn.QueryContext(ctx, "SELECT TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", name)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	counters := map[string]int64{}
	n := 0
	for rows.Next() {
		var tbl string
		var v sql.NullInt64
		if err := rows.Scan(&tbl, &v); err != nil {
			return nil, 0, err
		}
		n++
		if v.Valid {
			counters[tbl] = v.Int64
		}
	}
	return counters, n, rows.Err()
}

func (mysqlEngine) snapshot(ctx context.Context, admin *sql.DB, name, refName string) (*reference, error) {
	conn, err := admin.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ref := &reference{name: refName}
	if ref.counters, ref.relations, err = mysqlCounters(ctx, conn, name); err != nil {
		return nil, err
	}
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?", name).Scan(&ref.triggers); err != nil {
		return nil, err
	}
	ref.tables, err = queryStrings(ctx, admin,
		"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME", name)
	if err != nil {
		return nil, err
	}
	if ref.seeded, err = copySeeded(ctx, admin, " FROM DUAL", name, refName, ref.tables); err != nil {
		return nil, err
	}
	return ref, nil
}

// reset returns no deleted rows: InnoDB purges them by itself.
func (mysqlEngine) reset(ctx context.Context, admin *sql.DB, name string, ref *reference) (int64, error) {
	if ref.triggers > 0 {
		return 0, fmt.Errorf("build made %d triggers, which would fire again as the rows are restored", ref.triggers)
	}
	conn, err := admin.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	counters, tables, err := mysqlCounters(ctx, conn, name)
	if err != nil {
		return 0, err
	}
	if tables != ref.relations {
		return 0, fmt.Errorf("%w: %d tables, build made %d", errSchemaChanged, tables, ref.relations)
	}
	changed, err := nonEmpty(ctx, admin, " FROM DUAL", name, ref.tables)
	if err != nil {
		return 0, err
	}
	// The session's settings stay with the connection: it is not handed
	// back to the pool of connections (Raw's ErrBadConn below).
	stmts := []string{"SET SESSION lock_wait_timeout = 10", "SET SESSION innodb_lock_wait_timeout = 10", "SET SESSION foreign_key_checks = 0"}
	for _, tbl := range changed {
		stmts = append(stmts, "DELETE FROM "+name+"."+tbl)
	}
	for _, tbl := range ref.seeded {
		stmts = append(stmts, "INSERT INTO "+name+"."+tbl+" SELECT * FROM "+ref.name+"."+tbl)
	}
	for tbl, v := range counters {
		if v != ref.counters[tbl] {
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s.%s AUTO_INCREMENT = %d", name, tbl, ref.counters[tbl]))
		}
	}
	defer conn.Raw(func(any) error { return driver.ErrBadConn })
	for _, stmt := range stmts {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return 0, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return 0, nil
}

func (mysqlEngine) vacuum(context.Context, *sql.DB, string, *reference) error { return nil }

// nonEmpty returns the tables of schema (a PostgreSQL schema or a MySQL
// database) holding at least one row, in one statement; from is what
// the server needs after a SELECT without a table (MySQL: FROM DUAL).
func nonEmpty(ctx context.Context, db *sql.DB, from, schema string, tables []string) ([]string, error) {
	if len(tables) == 0 {
		return nil, nil
	}
	parts := make([]string, len(tables))
	for i, tbl := range tables {
		parts[i] = fmt.Sprintf("SELECT '%s'%s WHERE EXISTS (SELECT 1 FROM %s.%s)", tbl, from, schema, tbl)
	}
	return queryStrings(ctx, db, strings.Join(parts, " UNION ALL "))
}

// copySeeded copies the tables of schema holding rows (nonEmpty; from as
// there) into the schema ref, as they are, and returns their names.
func copySeeded(ctx context.Context, db *sql.DB, from, schema, ref string, tables []string) ([]string, error) {
	seeded, err := nonEmpty(ctx, db, from, schema, tables)
	if err != nil {
		return nil, err
	}
	for _, tbl := range seeded {
		if _, err := db.ExecContext(ctx, "CREATE TABLE "+ref+"."+tbl+" AS SELECT * FROM "+schema+"."+tbl); err != nil {
			return nil, err
		}
	}
	return seeded, nil
}

func qualified(schema string, tables []string) string {
	q := make([]string, len(tables))
	for i, tbl := range tables {
		q[i] = schema + "." + tbl
	}
	return strings.Join(q, ", ")
}

func queryStrings(ctx context.Context, db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
