package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun/driver/sqliteshim"
)

// counted is a driver connection that counts the statements prepared on
// it and those closed.
type counted struct {
	innerConn
	prepared, closed *atomic.Int64
}

func (c counted) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := c.innerConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.prepared.Add(1)
	return countedStmt{s.(queryStmt), c.closed}, nil
}

type queryStmt interface {
	driver.Stmt
	driver.StmtQueryContext
}

type countedStmt struct {
	queryStmt
	closed *atomic.Int64
}

func (s countedStmt) Close() error {
	s.closed.Add(1)
	return s.queryStmt.Close()
}

// keptConnector connects to a SQLite file through KeepPrepared, counting
// the statements prepared and closed.
type keptConnector struct {
	dsn              string
	prepared, closed atomic.Int64
}

func (k *keptConnector) Connect(context.Context) (driver.Conn, error) {
	c, err := sqliteshim.Driver().Open(k.dsn)
	if err != nil {
		return nil, err
	}
	return KeepPrepared(counted{c.(innerConn), &k.prepared, &k.closed}), nil
}

func (*keptConnector) Driver() driver.Driver { return sqliteshim.Driver() }

// keptDB is a pool of one connection to a new SQLite file with a table of
// the numbers 1 to 10, through KeepPrepared.
func keptDB(t *testing.T) (*sql.DB, *keptConnector) {
	t.Helper()
	k := &keptConnector{dsn: filepath.Join(t.TempDir(), "kept.db")}
	db := sql.OpenDB(k)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	for _, stmt := range []string{"CREATE TABLE n (v INTEGER)", "WITH RECURSIVE c(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM c WHERE v < 10) INSERT INTO n SELECT v FROM c"} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	return db, k
}

// sum is the sum of the numbers above v, read by the statement that
// keptDB's tests keep prepared.
func sum(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, above int) int {
	t.Helper()
	var s int
	if err := q.QueryRowContext(context.Background(), "SELECT coalesce(sum(v), 0) FROM n WHERE v > ?", above).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestKeepPreparedPreparesOnce: a text run again with other values is
// not prepared again, and each run sees its own values.
func TestKeepPreparedPreparesOnce(t *testing.T) {
	db, k := keptDB(t)
	for above, want := range []int{55, 54, 52, 49, 45} {
		if got := sum(t, db, above); got != want {
			t.Errorf("sum above %d: %d, want %d", above, got, want)
		}
	}
	if n := k.prepared.Load(); n != 1 {
		t.Errorf("%d statements prepared for five runs of one text, want 1", n)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if got := sum(t, tx, 8); got != 19 {
		t.Errorf("in a transaction: %d, want 19", got)
	}
	must(t, tx.Commit())
	if n := k.prepared.Load(); n != 1 {
		t.Errorf("%d statements prepared after a run in a transaction, want 1", n)
	}
}

// TestKeepPreparedBusyStatement: a text run again while the rows of its
// kept statement are open is prepared for that run, and both read their
// own rows; the second statement is closed with its rows.
func TestKeepPreparedBusyStatement(t *testing.T) {
	db, k := keptDB(t)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const text = "SELECT v FROM n WHERE v > ? ORDER BY v"
	first, err := conn.QueryContext(context.Background(), text, 7)
	if err != nil {
		t.Fatal(err)
	}
	second, err := conn.QueryContext(context.Background(), text, 8)
	if err != nil {
		t.Fatal(err)
	}
	read := func(rows *sql.Rows) string {
		var out string
		for n := 0; rows.Next(); n++ {
			if n == 10 { // a statement that two runs share reads on and on
				t.Fatalf("more than 10 rows: %q...", out)
			}
			var v int
			must(t, rows.Scan(&v))
			out += fmt.Sprint(v, " ")
		}
		must(t, rows.Err())
		must(t, rows.Close())
		return out
	}
	// Interleaved: the second's rows first, then the first's.
	if got := read(second); got != "9 10 " {
		t.Errorf("second run: %q, want %q", got, "9 10 ")
	}
	if got := read(first); got != "8 9 10 " {
		t.Errorf("first run: %q, want %q", got, "8 9 10 ")
	}
	if p, c := k.prepared.Load(), k.closed.Load(); p != 2 || c != 1 {
		t.Errorf("%d prepared, %d closed: want 2 and 1 (the busy one's second statement)", p, c)
	}
	if got := sum(t, conn, 9); got != 10 {
		t.Errorf("a third run: %d, want 10", got)
	}
}

// TestKeepPreparedFailedRun: a run that fails drops its statement, and the
// text runs again afterwards.
func TestKeepPreparedFailedRun(t *testing.T) {
	db, k := keptDB(t)
	const text = "SELECT abs(?) FROM n WHERE v = 1"
	var v int64
	if err := db.QueryRow(text, int64(-9223372036854775808)).Scan(&v); err == nil {
		t.Fatal("abs of the lowest integer: no error")
	}
	if err := db.QueryRow(text, -3).Scan(&v); err != nil || v != 3 {
		t.Fatalf("after the failed run: %d, %v; want 3", v, err)
	}
	if p, c := k.prepared.Load(), k.closed.Load(); p != 2 || c != 1 {
		t.Errorf("%d prepared, %d closed: want 2 and 1", p, c)
	}
}

// TestKeepPreparedDropsTheLeastRecent: past keptStatements texts, the
// least recently used is closed, and prepared again when it comes back;
// closing the connection closes the others.
func TestKeepPreparedDropsTheLeastRecent(t *testing.T) {
	db, k := keptDB(t)
	for i := range keptStatements + 1 {
		var v int
		if err := db.QueryRow(fmt.Sprintf("SELECT v + %d FROM n WHERE v = ?", i), 1).Scan(&v); err != nil || v != 1+i {
			t.Fatalf("text %d: %d, %v", i, v, err)
		}
	}
	if p, c := k.prepared.Load(), k.closed.Load(); p != keptStatements+1 || c != 1 {
		t.Errorf("%d prepared, %d closed: want %d and 1", p, c, keptStatements+1)
	}
	var v int
	if err := db.QueryRow("SELECT v + 0 FROM n WHERE v = ?", 2).Scan(&v); err != nil || v != 2 {
		t.Fatalf("the first text again: %d, %v", v, err)
	}
	if p := k.prepared.Load(); p != keptStatements+2 {
		t.Errorf("the first text again: %d prepared in all, want %d", p, keptStatements+2)
	}
	must(t, db.Close())
	if p, c := k.prepared.Load(), k.closed.Load(); c != p {
		t.Errorf("closed the connection: %d of %d statements closed", c, p)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
