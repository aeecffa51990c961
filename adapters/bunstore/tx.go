package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// maxAttempts bounds how often a transaction runs when it loses a deadlock
// or serialization conflict.
const maxAttempts = 8

// inTx runs fn in a write transaction, raises the store's version as the
// transaction's last statement unless fn did (bumpVersionOnce, see
// version.go), and commits.
// When fn returns errNothingWritten, the transaction is rolled back
// instead, the version stays, and inTx returns nil.
//
// A transaction that loses a deadlock or serialization conflict runs again,
// at most maxAttempts times in all. Errors fn wraps in callbackError are
// returned as they are; others are mapped by fail.
func (s *Store) inTx(ctx context.Context, op string, fn func(ctx context.Context, tx bun.Tx) error) error {
	write := func(ctx context.Context, tx bun.Tx) error {
		ctx = context.WithValue(ctx, bumpedKey{}, new(bool))
		if err := fn(ctx, tx); err != nil {
			return err
		}
		return s.bumpVersionOnce(ctx, tx)
	}
	for attempt := 1; ; attempt++ {
		err := s.db.RunInTx(ctx, nil, write)
		if err == nil || errors.Is(err, errNothingWritten) {
			return nil
		}
		if !retryable(err) || attempt >= maxAttempts || ctx.Err() != nil {
			return s.fail(op, err)
		}
		s.log.Debug("bunstore: retrying transaction", "op", op, "attempt", attempt, "cause", err.Error())
		backoff := time.Duration(attempt) * time.Millisecond * time.Duration(1+rand.IntN(5))
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return s.fail(op, ctx.Err())
		}
	}
}

// inReadTx runs fn in a read-only transaction that sees one snapshot of the
// database, so that several queries agree with each other (a page and its
// total, the figures of the project list).
func (s *Store) inReadTx(ctx context.Context, op string, fn func(ctx context.Context, tx bun.Tx) error) error {
	var opts *sql.TxOptions
	switch s.dialect {
	case dialect.PG, dialect.MySQL:
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	// SQLite: a deferred transaction takes its snapshot at the first read
	// (WAL); the in-memory database has a single connection anyway.
	if err := s.rdb.RunInTx(ctx, opts, fn); err != nil {
		return s.fail(op, err)
	}
	return nil
}

// forUpdate locks the selected rows until the transaction ends. SQLite has
// no row locks and needs none: its single writer connection runs one
// transaction at a time, each holding the database write lock from BEGIN.
func (s *Store) forUpdate(q *bun.SelectQuery) *bun.SelectQuery {
	if s.dialect == dialect.SQLite {
		return q
	}
	return q.For("UPDATE")
}
