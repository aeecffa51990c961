package faultsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/faultsql"
)

// engine is a database with its driver, wrapped.
type engine struct {
	name string
	url  func(testing.TB) string
	// arg is the placeholder of the first argument.
	arg string
	// own reports whether dc is the driver's own connection.
	own func(dc driver.Conn) bool
}

var engines = []engine{
	{"SQLite", dbtest.SQLite, "?", func(dc driver.Conn) bool { return strings.Contains(fmt.Sprintf("%T", dc), "sqlite") }},
	{"Postgres", dbtest.Postgres, "$1", func(dc driver.Conn) bool { _, ok := dc.(*stdlib.Conn); return ok }},
	{"MySQL", dbtest.MySQL, "?", func(dc driver.Conn) bool { return strings.Contains(fmt.Sprintf("%T", dc), "mysql") }},
}

// forEachEngine runs test on each engine, with a pool of its database
// (which has a table items (n INT)) whose connections pass through f.
func forEachEngine(t *testing.T, test func(t *testing.T, e engine, db *sql.DB, f *faultsql.Faults)) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			f := faultsql.New()
			db := sql.OpenDB(f.Wrap(dbtest.Connector(t, e.url(t))))
			t.Cleanup(func() { db.Close() })
			if _, err := db.Exec("CREATE TABLE items (n INT)"); err != nil {
				t.Fatal(err)
			}
			test(t, e, db, f)
		})
	}
}

// items returns the values of n in items, by a statement no rule matches.
func items(t *testing.T, db *sql.DB) []int {
	t.Helper()
	rows, err := db.Query("SELECT n FROM items ORDER BY n")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []int
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// ways are the ways database/sql runs a statement, each inserting n into
// items: Exec or Query, plain or with arguments, prepared, in a
// transaction.
func ways(e engine) []struct {
	name   string
	insert func(ctx context.Context, db *sql.DB, n int) error
} {
	inTx := func(ctx context.Context, db *sql.DB, run func(tx *sql.Tx) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := run(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	return []struct {
		name   string
		insert func(ctx context.Context, db *sql.DB, n int) error
	}{
		{"Exec", func(ctx context.Context, db *sql.DB, n int) error {
			_, err := db.ExecContext(ctx, fmt.Sprintf("INSERT INTO items (n) VALUES (%d)", n))
			return err
		}},
		{"ExecArgs", func(ctx context.Context, db *sql.DB, n int) error {
			_, err := db.ExecContext(ctx, "INSERT INTO items (n) VALUES ("+e.arg+")", n)
			return err
		}},
		{"Query", func(ctx context.Context, db *sql.DB, n int) error {
			rows, err := db.QueryContext(ctx, fmt.Sprintf("INSERT INTO items (n) VALUES (%d)", n))
			if err != nil {
				return err
			}
			return drain(rows)
		}},
		{"QueryArgs", func(ctx context.Context, db *sql.DB, n int) error {
			rows, err := db.QueryContext(ctx, "INSERT INTO items (n) VALUES ("+e.arg+")", n)
			if err != nil {
				return err
			}
			return drain(rows)
		}},
		{"Prepared", func(ctx context.Context, db *sql.DB, n int) error {
			st, err := db.PrepareContext(ctx, "INSERT INTO items (n) VALUES ("+e.arg+")")
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = st.ExecContext(ctx, n)
			return err
		}},
		{"InTx", func(ctx context.Context, db *sql.DB, n int) error {
			return inTx(ctx, db, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO items (n) VALUES ("+e.arg+")", n)
				return err
			})
		}},
	}
}

// TestErrFailsEveryWay: a statement a rule with Err matches fails with
// it, and does not reach the database, however it runs; once the rule is
// removed, it runs.
func TestErrFailsEveryWay(t *testing.T) {
	injected := errors.New("injected")
	forEachEngine(t, func(t *testing.T, e engine, db *sql.DB, f *faultsql.Faults) {
		ctx := context.Background()
		for i, w := range ways(e) {
			remove := f.Add(faultsql.Rule{Match: `^INSERT INTO items`, Err: injected})
			if err := w.insert(ctx, db, i+1); !errors.Is(err, injected) {
				t.Errorf("%s: got %v, want the rule's error", w.name, err)
			}
			remove()
			if got := items(t, db); len(got) != i {
				t.Fatalf("%s: items holds %v, want the failed statement not run", w.name, got)
			}
			if err := w.insert(ctx, db, i+1); err != nil {
				t.Fatalf("%s without the rule: %v", w.name, err)
			}
		}
	})
}

// TestBeforeRunsOnceWithTheContext: Before runs once per statement, with
// the statement's context and text, however the statement runs (on
// MySQL, a statement with arguments is prepared after the driver declines
// it), and its error fails the statement.
func TestBeforeRunsOnceWithTheContext(t *testing.T) {
	type key struct{}
	forEachEngine(t, func(t *testing.T, e engine, db *sql.DB, f *faultsql.Faults) {
		var mu sync.Mutex
		var seen []string
		f.Add(faultsql.Rule{Match: `^INSERT INTO items`, Before: func(ctx context.Context, query string) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprint(ctx.Value(key{}), " ", query))
			if strings.Contains(query, "-1") {
				return errors.New("refused")
			}
			return nil
		}})
		for i, w := range ways(e) {
			ctx := context.WithValue(context.Background(), key{}, w.name)
			seen = nil
			if err := w.insert(ctx, db, i); err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			if len(seen) != 1 || !strings.HasPrefix(seen[0], w.name+" INSERT INTO items") {
				t.Errorf("%s: Before saw %q, want the statement once, with its context", w.name, seen)
			}
		}
		_, err := db.Exec("INSERT INTO items (n) VALUES (-1)")
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("got %v, want Before's error", err)
		}
	})
}

// TestBeforeHolds: a Before that blocks (Hold) holds its statement until
// it returns; Hold lets the next one through.
func TestBeforeHolds(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine, db *sql.DB, f *faultsql.Faults) {
		held, release := make(chan struct{}), make(chan struct{})
		f.Add(faultsql.Rule{Match: `^INSERT INTO items`, Before: faultsql.Hold(held, release)})
		done := make(chan error, 1)
		go func() {
			_, err := db.Exec("INSERT INTO items (n) VALUES (1)")
			done <- err
		}()
		<-held
		if got := items(t, db); len(got) != 0 {
			t.Errorf("items holds %v while the insert is held, want nothing", got)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("INSERT INTO items (n) VALUES (2)"); err != nil {
			t.Fatalf("the next insert, which Hold lets through: %v", err)
		}
		if got := items(t, db); fmt.Sprint(got) != "[1 2]" {
			t.Errorf("items holds %v after the inserts, want [1 2]", got)
		}
	})
}

// TestRewrite: the database runs the rewritten text of a statement, run
// or prepared; the rules match the text as written.
func TestRewrite(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine, db *sql.DB, f *faultsql.Faults) {
		f.Add(faultsql.Rule{Match: `^SELECT 1 AS n$`, Rewrite: func(q string) string { return strings.Replace(q, "1", "2", 1) }})
		f.Add(faultsql.Rule{Match: `^SELECT 1 AS n$`, Rewrite: func(q string) string { return q + " UNION ALL SELECT 3" }})
		var got []int
		rows, err := db.Query("SELECT 1 AS n")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var n int
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			got = append(got, n)
		}
		rows.Close()
		if fmt.Sprint(got) != "[2 3]" {
			t.Errorf("got %v, want [2 3]: the two rewrites, in the order of the rules", got)
		}
		st, err := db.Prepare("SELECT 1 AS n")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var n int
		if err := st.QueryRow().Scan(&n); err != nil || n != 2 {
			t.Errorf("prepared: got %d (%v), want 2", n, err)
		}
	})
}

// TestAfter runs after a statement that ran, not after one that failed,
// and its error takes the place of the result.
func TestAfter(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine, db *sql.DB, f *faultsql.Faults) {
		var after atomic.Int32
		f.Add(faultsql.Rule{Match: `^INSERT INTO items`, After: func(ctx context.Context, query string) error {
			after.Add(1)
			if strings.Contains(query, "(2)") {
				return errors.New("after 2")
			}
			return nil
		}})
		if _, err := db.Exec("INSERT INTO items (n) VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("INSERT INTO items (n) VALUES (2)"); err == nil || err.Error() != "after 2" {
			t.Errorf("got %v, want After's error", err)
		}
		if _, err := db.Exec("INSERT INTO items (no_such_column) VALUES (3)"); err == nil {
			t.Errorf("inserting into a column that does not exist: no error")
		}
		if got := after.Load(); got != 2 {
			t.Errorf("After ran %d times, want 2 (not after the statement that failed)", got)
		}
		if got := items(t, db); fmt.Sprint(got) != "[1 2]" {
			t.Errorf("items holds %v, want [1 2]: After runs once the statement ran", got)
		}
	})
}

// TestAtCommitFailRollsBack: a rule AtCommit with Err rolls back the
// transaction that ran a statement it matches, and its Commit returns
// the error; the statement itself ran; transactions that ran no such
// statement, and statements outside transactions, are left alone.
func TestAtCommitFailRollsBack(t *testing.T) {
	injected := errors.New("injected")
	forEachEngine(t, func(t *testing.T, e engine, db *sql.DB, f *faultsql.Faults) {
		ctx := context.Background()
		f.Add(faultsql.Rule{Match: `^INSERT INTO items`, AtCommit: true, Err: injected})
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("INSERT INTO items (n) VALUES (1)"); err != nil {
			t.Fatalf("the statement: %v, want it run", err)
		}
		if err := tx.Commit(); !errors.Is(err, injected) {
			t.Errorf("Commit: got %v, want the rule's error", err)
		}
		if got := items(t, db); len(got) != 0 {
			t.Errorf("items holds %v, want the transaction rolled back", got)
		}
		tx, err = db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("UPDATE items SET n = 2"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Errorf("Commit of a transaction without a matching statement: %v", err)
		}
		if _, err := db.Exec("INSERT INTO items (n) VALUES (3)"); err != nil {
			t.Errorf("a matching statement outside a transaction: %v", err)
		}
		if got := items(t, db); fmt.Sprint(got) != "[3]" {
			t.Errorf("items holds %v, want [3]", got)
		}
	})
}

// TestAtCommitHolds: a rule AtCommit with a Before that blocks holds the
// commit: nothing of the transaction is visible until it returns, with
// the transaction's context.
func TestAtCommitHolds(t *testing.T) {
	type key struct{}
	forEachEngine(t, func(t *testing.T, e engine, db *sql.DB, f *faultsql.Faults) {
		held, release := make(chan string, 1), make(chan struct{})
		f.Add(faultsql.Rule{Match: `^INSERT INTO items`, AtCommit: true, Before: func(ctx context.Context, query string) error {
			held <- fmt.Sprint(ctx.Value(key{}), " ", query)
			<-release
			return nil
		}})
		ctx := context.WithValue(context.Background(), key{}, "tx")
		done := make(chan error, 1)
		go func() {
			tx, err := db.BeginTx(ctx, nil)
			if err == nil {
				if _, err = tx.Exec("INSERT INTO items (n) VALUES (1)"); err == nil {
					err = tx.Commit()
				}
			}
			done <- err
		}()
		select {
		case got := <-held:
			if got != "tx COMMIT" {
				t.Errorf("Before got %q, want the transaction's context and COMMIT", got)
			}
		case err := <-done:
			t.Fatalf("the transaction ended before its commit: %v", err)
		}
		if got := items(t, db); len(got) != 0 {
			t.Errorf("items holds %v while the commit is held, want nothing", got)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := items(t, db); fmt.Sprint(got) != "[1]" {
			t.Errorf("items holds %v after the commit, want [1]", got)
		}
	})
}

// TestUnwrap: the wrapped connection gives the driver's own.
func TestUnwrap(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine, db *sql.DB, f *faultsql.Faults) {
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		err = conn.Raw(func(dc any) error {
			w, ok := dc.(interface{ Unwrap() driver.Conn })
			if !ok {
				return fmt.Errorf("%T has no Unwrap", dc)
			}
			if !e.own(w.Unwrap()) {
				return fmt.Errorf("Unwrap gave %T, want the driver's connection", w.Unwrap())
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	})
}

// TestRulesChangeWhileStatementsRun adds and removes a rule while
// statements run on several connections (for the race detector): a
// statement the rule matches runs or fails with its error, one it does
// not match always runs.
func TestRulesChangeWhileStatementsRun(t *testing.T) {
	injected := errors.New("injected")
	forEachEngine(t, func(t *testing.T, e engine, db *sql.DB, f *faultsql.Faults) {
		var changer, writers sync.WaitGroup
		stop := make(chan struct{})
		changer.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				f.Add(faultsql.Rule{Match: `^SELECT 0`, Err: injected})()
			}
		})
		for range 4 {
			writers.Go(func() {
				for range 50 {
					var n int
					if err := db.QueryRow("SELECT 0").Scan(&n); err != nil && !errors.Is(err, injected) {
						t.Error(err)
					}
					if err := db.QueryRow("SELECT 1").Scan(&n); err != nil {
						t.Errorf("a statement no rule matches: %v", err)
					}
				}
			})
		}
		writers.Wait()
		close(stop)
		changer.Wait()
	})
}

// drain reads rows to their end and closes them: mattn's SQLite runs a
// statement sent as a query when its rows are first read, modernc's when
// it is sent.
func drain(rows *sql.Rows) error {
	for rows.Next() {
	}
	return errors.Join(rows.Err(), rows.Close())
}
