package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
)

// statementsDB is a pool of one connection on a new file holding t (id,
// k, v) of rows k = 0..999 and v = "v<k>", indexed by k, with the
// planner's samples of it (ANALYZE, which sqlite_stat4 holds).
func statementsDB(t *testing.T) *bun.DB {
	t.Helper()
	pool, err := sql.Open(sqliteshim.ShimName, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	pool.SetMaxOpenConns(1)
	db := Dialect{}.NewDB(pool)
	t.Cleanup(func() { db.Close() })
	for _, stmt := range []string{
		"CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, v TEXT NOT NULL)",
		"CREATE INDEX t_k ON t (k)",
		"WITH RECURSIVE n(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM n WHERE k < 999) INSERT INTO t (k, v) SELECT k, 'v' || k FROM n",
		"ANALYZE",
	} {
		if _, err := db.ExecContext(context.Background(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// count runs the count of the rows of t with from <= k < to and v IN vs
// by d.QueryPrepared on db.
func count(d Dialect, db bun.IDB, from, to int, vs ...string) (int, error) {
	stmt := sqlq.And(sqlq.F("k >= ? AND k < ?", from, to), sqlq.In("v", vs)).Wrap("SELECT COUNT(*) FROM t WHERE ", "")
	rows, err := d.QueryPrepared(context.Background(), db, stmt)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rows.Err()
}

// countIn is count, failing t on an error.
func countIn(t *testing.T, d Dialect, db bun.IDB, from, to int, vs ...string) int {
	t.Helper()
	n, err := count(d, db, from, to, vs...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStatementsKeptPrepared: a statement QueryPrepared runs in a
// transaction is prepared on its pool in the background, then run by its
// prepared statement with each run's values, with the same answers as when
// its values were written into the text; on the pool itself it runs as
// before. The pool here has one connection, which the transaction holds
// while the statement is new: preparing it then must not wait for that
// connection.
func TestStatementsKeptPrepared(t *testing.T) {
	ctx := context.Background()
	db := statementsDB(t)
	d := New()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := count(d, tx, 10, 20, "v12", "v15", "v30")
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		if r.err != nil || r.n != 2 {
			t.Errorf("first run in a transaction: %d rows, %v; want 2", r.n, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a new statement run in a transaction holding the pool's one connection did not return")
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// The background preparation finishes once the connection is free.
	var key statementKey
	deadline := time.Now().Add(30 * time.Second)
	for {
		keys := d.statements.kept.Keys()
		if len(keys) == 1 {
			if st, _ := d.statements.kept.Peek(keys[0]); st != nil {
				key = keys[0]
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("kept %d statements, want 1", len(keys))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Contains(strings.ReplaceAll(key.text, "+?", ""), "?") {
		t.Errorf("a placeholder the planner reads: %s", key.text)
	}
	for i, c := range []struct {
		from, to int
		vs       []string
		want     int
	}{
		{0, 1000, []string{"v1", "v999", "v1000"}, 2},
		{500, 510, []string{"v499", "v505", "v509"}, 2},
		{0, 0, []string{"v1", "v2", "v3"}, 0},
		{-5, 3, []string{"v0", "v2", "x"}, 2},
	} {
		for _, on := range []struct {
			name string
			db   func() (bun.IDB, func())
		}{
			{"pool", func() (bun.IDB, func()) { return db, func() {} }},
			{"transaction", func() (bun.IDB, func()) {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				return tx, func() { tx.Rollback() }
			}},
		} {
			idb, end := on.db()
			stmt := sqlq.And(sqlq.F("k >= ? AND k < ?", c.from, c.to), sqlq.In("v", c.vs)).Wrap("SELECT COUNT(*) FROM t WHERE ", "")
			rows, ok, err := d.statements.query(ctx, idb, stmt)
			if err != nil || ok != (on.name == "transaction") {
				t.Fatalf("case %d on the %s: ran by the prepared statement %v, %v", i, on.name, ok, err)
			}
			if ok {
				rows.Close()
			}
			if n := countIn(t, d, idb, c.from, c.to, c.vs...); n != c.want {
				t.Errorf("case %d on the %s: %d rows, want %d", i, on.name, n, c.want)
			}
			if n := countIn(t, Dialect{}, idb, c.from, c.to, c.vs...); n != c.want {
				t.Errorf("case %d on the %s, the values in the text: %d rows, want %d", i, on.name, n, c.want)
			}
			end()
		}
	}
	if n := d.statements.kept.Len(); n != 1 {
		t.Errorf("kept %d statements after runs of one text, want 1", n)
	}
}

// TestStatementsKeepAFailure: a text that fails to prepare is kept as
// failing, and runs with its values in the text (failing the same way)
// rather than starting a preparation at each run.
func TestStatementsKeepAFailure(t *testing.T) {
	ctx := context.Background()
	db := statementsDB(t)
	d := New()
	stmt := sqlq.F("SELECT COUNT(*) FROM no_such_table WHERE k = ?", 1)
	for range 2 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.QueryPrepared(ctx, tx, stmt); err == nil || !strings.Contains(err.Error(), "no_such_table") {
			t.Errorf("a statement on a missing table: %v", err)
		}
		tx.Rollback()
	}
	// The preparation the first run started, run to its end here.
	key := statementKey{pool: db.DB, text: hidden(stmt.Text)}
	d.statements.prepare(key)
	st, ok := d.statements.kept.Get(key)
	if !ok || st != nil {
		t.Errorf("the failing text kept as %v, %v; want nil, true", st, ok)
	}
}

// TestClosePreparedWaitsForAPreparation: a preparation in the background
// holds a connection of its pool (here one, which a transaction holds
// first, so that the preparation waits for it); ClosePrepared returns only
// once it has ended, and closes what it prepared, so that nothing of the
// store's runs on its pools after its Close (a preparation still opening
// a connection while a test removed the database's directory failed it).
func TestClosePreparedWaitsForAPreparation(t *testing.T) {
	ctx := context.Background()
	db := statementsDB(t)
	d := New()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := countIn(t, d, tx, 0, 10, "v1"); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
	closed := make(chan struct{})
	go func() {
		d.ClosePrepared()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("ClosePrepared returned while a preparation waited for the pool's connection")
	case <-time.After(time.Second): // it waits for the transaction to end
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("ClosePrepared did not return once the preparation could end")
	}
	if n := db.DB.Stats().InUse; n != 0 {
		t.Errorf("%d connections in use after ClosePrepared", n)
	}
	if n := d.statements.kept.Len(); n != 0 {
		t.Errorf("%d statements kept after ClosePrepared", n)
	}
	// After it, a statement runs with its values in the text, and no
	// preparation begins.
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if n := countIn(t, d, tx, 0, 10, "v2", "v3"); n != 2 {
		t.Errorf("after ClosePrepared: %d rows, want 2", n)
	}
	d.statements.preparing.Wait()
	keys := d.statements.kept.Keys()
	if len(keys) != 1 {
		t.Fatalf("%d statements kept, want the new text's entry alone", len(keys))
	}
	if st, _ := d.statements.kept.Peek(keys[0]); st != nil {
		t.Error("a statement prepared after ClosePrepared")
	}
}
