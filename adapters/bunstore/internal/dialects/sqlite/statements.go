package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
)

// statements are the statements a store keeps prepared on its pools for
// its transactions (QueryPrepared): SQLite then parses and plans each
// text once per connection instead of at every run. Parsing and planning the
// statements of a page at a large offset, each written anew with its
// values, took 39% of the server's CPU (a profile of random offsets at
// 1,000,000 events, 515 requests a second; 932 with the statements kept,
// the planning then 3%).
//
// A value bound where SQLite's planner could read it (compared with an
// indexed column, or in such an IN list) would make it plan the statement
// again at each new value, as SQLite's sqlite_stat4 samples may tell the
// values apart: every placeholder is written +? (hidden), which SQLite
// evaluates as the value itself but does not look into. The statements
// that go through QueryPrepared are those whose plan does not depend on
// their values.
//
// A text seen for the first time runs as before, written with its values,
// while it is prepared in the background on its pool: preparing on a pool
// needs a connection of it, which the caller's transaction may hold the
// last of. A text is kept as nil until it is prepared, and stays nil when
// it fails to prepare: it then runs with its values in the text until it
// is evicted, rather than starting a preparation at each run. At most
// statementsKept texts are kept, the least recently run closed first.
//
// A preparation in the background holds a connection of its pool, which
// the store's Close must not leave open: close waits for those begun and
// begins no more.
type statements struct {
	kept *lru.Cache[statementKey, *sql.Stmt]

	mu        sync.Mutex // guards closed and the start of a preparation
	closed    bool
	preparing sync.WaitGroup
}

// statementsKept bounds the texts a store keeps prepared: each shape of a
// page (at a large offset, or of a query one plan serves: its column, its
// cursor, offset and date bounds), of a caller's visibility (the number of
// its hidden projects) and of the seek's statements is one text.
const statementsKept = 512

// statementKey is a text prepared on a pool.
type statementKey struct {
	pool *sql.DB
	text string
}

func newStatements() *statements {
	kept, err := lru.NewWithEvict(statementsKept, func(_ statementKey, st *sql.Stmt) {
		if st != nil {
			_ = st.Close()
		}
	})
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &statements{kept: kept}
}

// query runs stmt in db, a transaction of a pool (those of a search, a
// page and the project list), by its prepared statement, and reports
// whether it did: not when db is no transaction (a statement on the pool
// itself, which Bun's query hooks see), a value is not one the driver
// binds, or the statement is not prepared: new (then its preparation
// starts), being prepared, or kept as failing to.
func (s *statements) query(ctx context.Context, db bun.IDB, stmt sqlq.Fragment) (*sql.Rows, bool, error) {
	tx, ok := db.(bun.Tx)
	if !ok || !bindable(stmt.Args) {
		return nil, false, nil
	}
	key := statementKey{pool: tx.NewRaw("").DB().DB, text: hidden(stmt.Text)}
	st, seen := s.kept.Get(key)
	if !seen {
		if seen, _ = s.kept.ContainsOrAdd(key, nil); !seen { // another run may have added it since
			s.mu.Lock()
			if !s.closed {
				s.preparing.Go(func() { s.prepare(key) })
			}
			s.mu.Unlock()
		}
		return nil, false, nil
	}
	if st == nil {
		return nil, false, nil
	}
	rows, err := tx.Tx.StmtContext(ctx, st).QueryContext(ctx, stmt.Args...)
	return rows, true, err
}

// prepare prepares key's text on its pool and keeps it; one that fails
// stays kept as nil.
func (s *statements) prepare(key statementKey) {
	if st, err := key.pool.PrepareContext(context.Background(), key.text); err == nil {
		s.kept.Add(key, st)
	}
}

// close waits for the preparations begun, begins no more, and closes the
// statements kept (they hold their connections' resources until then).
func (s *statements) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.preparing.Wait()
	s.kept.Purge() // closes each (the eviction callback)
}

// hidden is text with each placeholder written +? (every ? of a
// fragment's text is one, sqlq): the same value, which SQLite's planner
// does not read.
func hidden(text string) string { return strings.ReplaceAll(text, "?", "+?") }

// bindable reports whether the driver binds every one of args as it is.
func bindable(args []any) bool {
	for _, a := range args {
		switch a.(type) {
		case nil, int, int64, float64, bool, string, []byte:
		default:
			return false
		}
	}
	return true
}
