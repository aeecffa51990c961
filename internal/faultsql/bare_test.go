package faultsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flagadmin/flagadmin/internal/faultsql"
)

// bare is a driver with none of the optional interfaces: its connections
// only prepare statements and begin transactions, its statements only run
// with plain values. It records what it runs.
type bare struct {
	mu  sync.Mutex
	ran []string
}

func (b *bare) record(what string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ran = append(b.ran, what)
}

func (b *bare) transcript() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.ran)
}

func (b *bare) Connect(context.Context) (driver.Conn, error) { return bareConn{b}, nil }
func (b *bare) Driver() driver.Driver                        { return nil }

type bareConn struct{ b *bare }

func (c bareConn) Prepare(query string) (driver.Stmt, error) {
	c.b.record("prepare " + query)
	return bareStmt{c.b, query}, nil
}
func (c bareConn) Close() error { return nil }
func (c bareConn) Begin() (driver.Tx, error) {
	c.b.record("begin")
	return bareTx{c.b}, nil
}

type bareStmt struct {
	b     *bare
	query string
}

func (s bareStmt) Close() error  { return nil }
func (s bareStmt) NumInput() int { return -1 }
func (s bareStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.b.record(fmt.Sprint("exec ", s.query, args))
	return driver.RowsAffected(1), nil
}
func (s bareStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.b.record(fmt.Sprint("query ", s.query, args))
	return &bareRows{}, nil
}

type bareRows struct{ done bool }

func (r *bareRows) Columns() []string { return []string{"n"} }
func (r *bareRows) Close() error      { return nil }
func (r *bareRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(7)
	return nil
}

type bareTx struct{ b *bare }

func (t bareTx) Commit() error   { t.b.record("commit"); return nil }
func (t bareTx) Rollback() error { t.b.record("rollback"); return nil }

// useBare runs statements, transactions and arguments database/sql
// handles differently on a driver without the optional interfaces, and
// returns what happened: the errors, in order.
func useBare(db *sql.DB) []string {
	ctx := context.Background()
	var out []string
	note := func(what string, err error) { out = append(out, fmt.Sprint(what, ": ", err)) }
	_, err := db.ExecContext(ctx, "INSERT 1")
	note("exec", err)
	_, err = db.ExecContext(ctx, "INSERT ?", 2, "two")
	note("exec args", err)
	_, err = db.ExecContext(ctx, "INSERT :a", sql.Named("a", 3))
	note("exec named", err)
	var n int
	note("query", db.QueryRowContext(ctx, "SELECT ?", 4).Scan(&n))
	tx, err := db.BeginTx(ctx, nil)
	note("begin", err)
	if err == nil {
		_, err = tx.ExecContext(ctx, "INSERT 5")
		note("exec in tx", err)
		note("commit", tx.Commit())
	}
	_, err = db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	note("begin read-only", err)
	_, err = db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	note("begin serializable", err)
	st, err := db.PrepareContext(ctx, "SELECT 6")
	note("prepare", err)
	if err == nil {
		note("prepared query", st.QueryRowContext(ctx).Scan(&n))
		st.Close()
	}
	return out
}

// TestBareDriverAsUnwrapped: through the wrapper, without rules, a driver
// without the optional interfaces runs exactly what it runs unwrapped,
// and database/sql answers the same.
func TestBareDriverAsUnwrapped(t *testing.T) {
	plain, wrapped := &bare{}, &bare{}
	gotPlain := useBare(sql.OpenDB(plain))
	gotWrapped := useBare(sql.OpenDB(faultsql.New().Wrap(wrapped)))
	if !slices.Equal(gotWrapped, gotPlain) {
		t.Errorf("wrapped, database/sql answered\n%q\nwant, as unwrapped,\n%q", gotWrapped, gotPlain)
	}
	if !slices.Equal(wrapped.transcript(), plain.transcript()) {
		t.Errorf("wrapped, the driver ran\n%q\nwant, as unwrapped,\n%q", wrapped.transcript(), plain.transcript())
	}
}

// TestBareDriverRules: the rules apply on a driver without the optional
// interfaces, whose statements database/sql prepares: once per
// statement, and at the commit.
func TestBareDriverRules(t *testing.T) {
	b, f := &bare{}, faultsql.New()
	db := sql.OpenDB(f.Wrap(b))
	var before []string
	f.Add(faultsql.Rule{Match: `^INSERT`, Before: func(_ context.Context, q string) error { before = append(before, q); return nil }})
	f.Add(faultsql.Rule{Match: `^SELECT 1$`, Rewrite: func(string) string { return "SELECT 2" }})
	f.Add(faultsql.Rule{Match: `^DELETE`, Err: errors.New("refused")})
	f.Add(faultsql.Rule{Match: `^UPDATE`, AtCommit: true, Err: errors.New("not committed")})
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "INSERT ?", 1); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "DELETE"); err == nil || err.Error() != "refused" {
		t.Errorf("DELETE: got %v, want the rule's error", err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err == nil || err.Error() != "not committed" {
		t.Errorf("Commit: got %v, want the rule's error", err)
	}
	if want := []string{"INSERT ?"}; !slices.Equal(before, want) {
		t.Errorf("Before saw %q, want %q", before, want)
	}
	got := strings.Join(b.transcript(), "; ")
	if want := "prepare INSERT ?; exec INSERT ?[1]; prepare SELECT 2; query SELECT 2[]; prepare DELETE; begin; prepare UPDATE; exec UPDATE[]; rollback"; got != want {
		t.Errorf("the driver ran\n%s\nwant\n%s", got, want)
	}
}
