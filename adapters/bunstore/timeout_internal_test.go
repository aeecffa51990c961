package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/dberr"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/faultproxy"
	"github.com/flagadmin/flagadmin/internal/sqlitedsn"
)

func TestMySQLLimits(t *testing.T) {
	cases := []struct {
		version string
		d       time.Duration
		want    map[string]string
	}{
		{"11.4.5-MariaDB-ubu2404", 5 * time.Second, map[string]string{"innodb_lock_wait_timeout": "5", "max_statement_time": "5.000"}},
		{"10.11.6-MariaDB", 500 * time.Millisecond, map[string]string{"innodb_lock_wait_timeout": "1", "max_statement_time": "0.500"}},
		{"8.4.3", 1500 * time.Millisecond, map[string]string{"innodb_lock_wait_timeout": "2", "max_execution_time": "1500"}},
	}
	for _, c := range cases {
		if got := mysqlLimits(c.version, c.d); !maps.Equal(got, c.want) {
			t.Errorf("mysqlLimits(%q, %v): got %v, want %v", c.version, c.d, got, c.want)
		}
	}
}

// TestTimeoutTellsTheDatabase checks the server-side backstops of
// WithTimeout on the store's connections, and that the connections of
// Migrate have none.
func TestTimeoutTellsTheDatabase(t *testing.T) {
	ctx := context.Background()
	type setting struct{ query, want string }
	cases := []struct {
		name      string
		url       func(testing.TB) string
		bounded   []setting
		unbounded []setting
	}{
		{"SQLite", dbtest.SQLite, []setting{{"PRAGMA busy_timeout", "1500"}}, nil},
		{"Postgres", dbtest.Postgres,
			[]setting{{"SHOW statement_timeout", "1500ms"}, {"SHOW lock_timeout", "1500ms"}, {"SHOW idle_in_transaction_session_timeout", "1500ms"}},
			[]setting{{"SHOW statement_timeout", "0"}, {"SHOW lock_timeout", "0"}}},
		{"MySQL", dbtest.MySQL,
			[]setting{{"SELECT @@innodb_lock_wait_timeout", "2"}},
			[]setting{{"SELECT @@innodb_lock_wait_timeout", "50"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(ctx, c.url(t), WithTimeout(1500*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			check := func(db *bun.DB, settings []setting) {
				t.Helper()
				for _, st := range settings {
					var got string
					if err := db.QueryRowContext(ctx, st.query).Scan(&got); err != nil {
						t.Fatalf("%s: %v", st.query, err)
					}
					if got != st.want {
						t.Errorf("%s: got %q, want %q", st.query, got, st.want)
					}
				}
			}
			check(s.db, c.bounded)
			check(s.rdb, c.bounded)
			if c.unbounded == nil {
				return
			}
			db, err := s.openUnbounded()
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			check(db, c.unbounded)
		})
	}
}

// TestTimeoutEndsAStatementServerSide checks the PostgreSQL backstop: a
// statement the client does not bound (here run without a context
// deadline) is ended by the server after the storage deadline.
func TestTimeoutEndsAStatementServerSide(t *testing.T) {
	s, err := Open(context.Background(), dbtest.Postgres(t), WithTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	_, err = s.db.ExecContext(context.Background(), "SELECT pg_sleep(5)")
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the statement ran %v, want the server to end it after 300ms", took)
	}
	if kind, _ := dberr.Classify(err); kind != flagadmin.ErrUnavailable {
		t.Errorf("got %v, want a statement timeout (ErrUnavailable)", err)
	}
}

// TestTimeoutBoundsSQLiteBusyWaits checks that a write waiting for the
// write lock another connection (another process) holds gives up after
// the storage deadline: SQLite's busy wait ignores the context.
func TestTimeoutBoundsSQLiteBusyWaits(t *testing.T) {
	ctx := context.Background()
	url := dbtest.SQLite(t)
	const deadline = 300 * time.Millisecond
	s, err := Open(ctx, url, WithTimeout(deadline))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := sql.Open(sqliteshim.ShimName, sqlitedsn.Busy(url[len("sqlite:"):], 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, "ROLLBACK")

	start := time.Now()
	err = s.Write(ctx, &flagadmin.Batch{Projects: []flagadmin.Project{{ID: "p", Name: "P", Mode: flagadmin.ModeOpen}}})
	took := time.Since(start)
	if !errors.Is(err, flagadmin.ErrUnavailable) {
		t.Errorf("got %v, want ErrUnavailable", err)
	}
	if took > deadline+time.Second {
		t.Errorf("the write waited %v for the lock, want at most the deadline %v and a second", took, deadline)
	}
	// Reads do not wait for the writer (WAL).
	if _, err := s.Project(ctx, "p"); !errors.Is(err, flagadmin.ErrNotFound) {
		t.Errorf("read while locked: got %v, want ErrNotFound", err)
	}
}

// TestReadOnlyDatabase checks a SQLite database that refuses writes (here
// with the query_only pragma on the store's one writer connection: file
// permissions do not stop root): writes are ErrUnavailable (503) and
// change nothing, reads keep working.
func TestReadOnlyDatabase(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, dbtest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seed := &flagadmin.Batch{
		Projects: []flagadmin.Project{{ID: "web", Name: "Web", Mode: flagadmin.ModeOpen}},
		Features: []flagadmin.Feature{{Name: "checkout", Project: "web", Type: flagadmin.TypeRelease}},
	}
	if err := s.Write(ctx, seed); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
		t.Fatal(err)
	}
	err = s.UpdateFeature(ctx, "checkout", func(f *flagadmin.Feature) (*flagadmin.Event, error) {
		f.Lifecycle = flagadmin.Lifecycle{Stage: "completed", Status: "kept"}
		return &flagadmin.Event{Type: "feature-completed", FeatureName: &f.Name, Project: &f.Project}, nil
	})
	if !errors.Is(err, flagadmin.ErrUnavailable) {
		t.Errorf("update on a read-only database: got %v, want ErrUnavailable", err)
	}
	if err := s.Write(ctx, &flagadmin.Batch{Projects: []flagadmin.Project{{ID: "new", Name: "New", Mode: flagadmin.ModeOpen}}}); !errors.Is(err, flagadmin.ErrUnavailable) {
		t.Errorf("write on a read-only database: got %v, want ErrUnavailable", err)
	}
	f, err := s.Feature(ctx, "checkout")
	if err != nil {
		t.Fatalf("read on a read-only database: %v", err)
	}
	if f.Lifecycle.Stage == "completed" {
		t.Errorf("the refused update changed the feature: %+v", f.Lifecycle)
	}
	page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Limit: 10})
	if err != nil || page.Total != 0 {
		t.Errorf("events after the refused writes: %d, %v; want none", page.Total, err)
	}
	if _, err := s.Project(ctx, "new"); !errors.Is(err, flagadmin.ErrNotFound) {
		t.Errorf("the refused write stored its project: %v", err)
	}
}

// TestPageStatementEndedByItsContext checks that a page statement whose
// context ends before a frozen server answers reports the context's end
// (ErrUnavailable, 503), not a malformed answer (an internal error): pgx
// then returns rows with no columns, and the error in rows.Err.
func TestPageStatementEndedByItsContext(t *testing.T) {
	u, err := url.Parse(dbtest.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	u.Host = proxy.Addr()
	s, err := Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A prepared statement, as the page statements whose plan is generic,
	// already in the connection's cache.
	args := []any{pgx.QueryExecModeCacheStatement}
	if _, err := s.queryPage(context.Background(), "SELECT 1", args, 10); err == nil {
		t.Fatal("SELECT 1 passed for a page statement")
	}
	proxy.Set(faultproxy.Stall)
	defer proxy.Set(faultproxy.Pass)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.queryPage(ctx, "SELECT 1", args, 10)
	if took := time.Since(start); took > time.Second {
		t.Errorf("the statement ran %v past its context's deadline of 100ms", took)
	}
	if kind, _ := dberr.Classify(err); kind != flagadmin.ErrUnavailable {
		t.Errorf("got %v, want ErrUnavailable (the context's end)", err)
	}
}

// TestPageReadsAfterConnectionsDropped checks what queryPage owes callers
// when the server drops its connections (backends terminated, as on a
// restart, or the network cut): each dropped connection fails at most one
// page statement, with ErrUnavailable (a 503), and is then discarded, so
// the reads after it succeed. queryPage tries a statement once, as
// database/sql's QueryContext does with one sent on a dropped connection.
// How many reads fail is not fixed: pgx pings a connection idle for more
// than a second before it is lent, and one that fails the ping is
// discarded without failing a read. That the fault was felt shows instead
// in the connections the pool opens after it: reads one at a time with
// idle connections at hand open none unless those were found dropped.
func TestPageReadsAfterConnectionsDropped(t *testing.T) {
	const app = "flagadmin-dropped-test"
	for _, fault := range []struct {
		name string
		do   func(t *testing.T, proxy *faultproxy.Proxy)
	}{
		{"backends terminated", func(t *testing.T, _ *faultproxy.Proxy) {
			killer, err := sql.Open("pgx", dbtest.Postgres(t))
			if err != nil {
				t.Fatal(err)
			}
			defer killer.Close()
			var n int
			err = killer.QueryRowContext(context.Background(), "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n)
			if err != nil || n == 0 {
				t.Fatalf("terminated %d backends: %v", n, err)
			}
			// The backends exit: wait until none is left, or a read below
			// could still run on one and its failure come later.
			for deadline := time.Now().Add(30 * time.Second); n > 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d backends still there 30 s after they were terminated", n)
				}
				if err := killer.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"network cut", func(t *testing.T, proxy *faultproxy.Proxy) {
			proxy.Set(faultproxy.Cut)
			time.Sleep(50 * time.Millisecond)
			proxy.Set(faultproxy.Pass)
		}},
	} {
		t.Run(fault.name, func(t *testing.T) {
			u, err := url.Parse(dbtest.Postgres(t))
			if err != nil {
				t.Fatal(err)
			}
			proxy, err := faultproxy.New(u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			u.Host = proxy.Addr()
			params := u.Query()
			params.Set("application_name", app)
			u.RawQuery = params.Encode()
			s, err := Open(context.Background(), u.String())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			const conns = 3
			s.rdb.DB.SetMaxOpenConns(conns)
			ctx := context.Background()
			q := flagadmin.EventQuery{Limit: 10}
			query, args := s.pageStatement(q, true)
			// Fill the pool: conns statements at once.
			errs := make(chan error, conns)
			for range conns {
				go func() { _, err := s.queryPage(ctx, query, args, 10); errs <- err }()
			}
			for range conns {
				if err := <-errs; err != nil {
					t.Fatalf("before the fault: %v", err)
				}
			}
			// database/sql may still be opening a connection for a read
			// that another one served: one that came up after the fault
			// would serve every read below (the pool lends the connection
			// returned last), none failing and none opened after. Wait
			// until every open connection is idle, so the fault meets all.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				if st := s.rdb.DB.Stats(); st.Idle == st.OpenConnections {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("connections still opening 30 s after the reads: %+v", s.rdb.DB.Stats())
				}
			}
			served := proxy.Served()
			fault.do(t, proxy)
			failed := 0
			for i := range 2 * conns {
				_, err := s.queryPage(ctx, query, args, 10)
				if err == nil {
					continue
				}
				failed++
				if kind, _ := dberr.Classify(err); kind != flagadmin.ErrUnavailable {
					t.Errorf("read %d: got %v (kind %v), want ErrUnavailable", i+1, err, kind)
				}
				if i >= conns {
					t.Errorf("read %d failed (%v): more failures than dropped connections (%d)", i+1, err, conns)
				}
			}
			if proxy.Served() == served {
				t.Errorf("no connection opened after the fault: the dropped ones were not found")
			}
			t.Logf("%d of %d reads failed after the fault", failed, 2*conns)
		})
	}
}
