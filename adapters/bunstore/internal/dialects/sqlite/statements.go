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

// statements are the statements a store keeps prepared on its pools
// (QueryPrepared): SQLite then parses and plans each text once per
// connection instead of at every run. Parsing and planning the
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
// last of. At most statementsKept texts are kept, the least recently run
// closed first.
type statements struct {
	kept *lru.Cache[statementKey, *sql.Stmt]

	mu        sync.Mutex
	preparing map[statementKey]bool
}

// statementsKept bounds the texts a store keeps prepared: each shape of a
// page at a large offset, of a caller's visibility (the number of its
// hidden projects) and of the seek's statements is one text.
const statementsKept = 512

// statementKey is a text prepared on a pool.
type statementKey struct {
	pool *sql.DB
	text string
}

func newStatements() *statements {
	kept, err := lru.NewWithEvict(statementsKept, func(_ statementKey, st *sql.Stmt) { _ = st.Close() })
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &statements{kept: kept, preparing: map[statementKey]bool{}}
}

// query runs stmt on db (a transaction of a pool, or the pool) by its
// prepared statement and reports whether it did: not when db is neither,
// a value is not one the driver binds, or the statement is not prepared
// yet (then it is being prepared).
func (s *statements) query(ctx context.Context, db bun.IDB, stmt sqlq.Fragment) (*sql.Rows, bool, error) {
	if !bindable(stmt.Args) {
		return nil, false, nil
	}
	key := statementKey{text: hidden(stmt.Text)}
	var run func(*sql.Stmt) (*sql.Rows, error)
	switch x := db.(type) {
	case bun.Tx:
		key.pool = x.NewRaw("").DB().DB
		run = func(st *sql.Stmt) (*sql.Rows, error) {
			return x.Tx.StmtContext(ctx, st).QueryContext(ctx, stmt.Args...)
		}
	case *bun.DB:
		key.pool = x.DB
		run = func(st *sql.Stmt) (*sql.Rows, error) { return st.QueryContext(ctx, stmt.Args...) }
	default:
		return nil, false, nil
	}
	st, ok := s.kept.Get(key)
	if !ok {
		s.prepare(key)
		return nil, false, nil
	}
	rows, err := run(st)
	return rows, true, err
}

// prepare prepares key's text on its pool in the background, unless that
// is under way, and keeps it. A text that fails to prepare (a table a
// migration has yet to make) is tried again at its next run.
func (s *statements) prepare(key statementKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.preparing[key] {
		return
	}
	s.preparing[key] = true
	go func() {
		st, err := key.pool.PrepareContext(context.Background(), key.text)
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.preparing, key)
		if err == nil {
			s.kept.Add(key, st)
		}
	}()
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
