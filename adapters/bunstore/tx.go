package bunstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/uptrace/bun"
)

// maxAttempts bounds how often a transaction runs when it loses a deadlock
// or serialization conflict.
const maxAttempts = 8

// txn is a write transaction: the Bun transaction, the connection it runs
// on (COPY goes through its pgx connection), and whether it has raised the
// store's version yet.
type txn struct {
	bun.Tx
	conn          bun.Conn
	versionRaised bool
	// wroteEvents: the transaction appended events, whose leaves are
	// appended once it commits (leaves.go).
	wroteEvents bool
}

// errNothingWritten is returned by a write transaction's function that
// decided to write nothing: inTx rolls the transaction back, leaves the
// version alone, and returns nil.
var errNothingWritten = errors.New("bunstore: nothing written")

// inTx runs fn in a write transaction, then records what it changed
// (record: the summaries, the version, the events) and commits. When fn
// returns errNothingWritten, the transaction is rolled back instead and
// inTx returns nil.
//
// A transaction that loses a deadlock or serialization conflict runs again,
// at most maxAttempts times in all. Errors fn wraps in callbackError are
// returned as they are; others are mapped by fail.
func (s *Store) inTx(ctx context.Context, op string, fn func(ctx context.Context, t *txn) (*changes, error)) error {
	for attempt := 1; ; attempt++ {
		err := s.runTx(ctx, fn)
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

// runTx is one attempt of inTx, on a connection of its own.
func (s *Store) runTx(ctx context.Context, fn func(ctx context.Context, t *txn) (*changes, error)) error {
	s.prepareInserts(ctx)
	var t *txn
	err := s.inConnTx(ctx, func(ctx context.Context, tx *txn) error {
		t = tx
		ch, err := fn(ctx, t)
		if err != nil {
			return err
		}
		return s.record(ctx, t, ch)
	})
	if err == nil && t.wroteEvents {
		s.leaves.wrote()
	}
	return err
}

// inConnTx runs fn in a write transaction on a connection of its own, which
// what fn sends on the connection's driver (COPY) needs.
func (s *Store) inConnTx(ctx context.Context, fn func(ctx context.Context, t *txn) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return fn(ctx, &txn{Tx: tx, conn: conn})
	})
}

// inReadTx runs fn in a read-only transaction that sees one snapshot of the
// database, so that several queries agree with each other (a page and its
// total, the figures of the project list).
func (s *Store) inReadTx(ctx context.Context, op string, fn func(ctx context.Context, tx bun.Tx) error) error {
	return s.inReadConn(ctx, op, func(ctx context.Context, _ bun.Conn, tx bun.Tx) error { return fn(ctx, tx) })
}

// inReadConn is inReadTx on a connection of its own (readerConn), which fn
// is given too: what fn reads on the connection's driver
// (summaries.ReadPageIn) is in the transaction.
func (s *Store) inReadConn(ctx context.Context, op string, fn func(ctx context.Context, conn bun.Conn, tx bun.Tx) error) error {
	err := func() error {
		conn, release, err := s.readerConn(ctx)
		if err != nil {
			return err
		}
		defer release()
		return conn.RunInTx(ctx, s.sqlDialect.ReadTxOptions(), func(ctx context.Context, tx bun.Tx) error {
			return fn(ctx, conn, tx)
		})
	}()
	if err != nil {
		return s.fail(op, err)
	}
	return nil
}

// readerConn takes a connection of the read pool for what a request reads
// in one go, once the read gate of a SQLite file admits it (readGate);
// release gives both back.
func (s *Store) readerConn(ctx context.Context) (conn bun.Conn, release func(), err error) {
	leave, err := s.reads.enter(ctx)
	if err != nil {
		return bun.Conn{}, nil, err
	}
	if conn, err = s.rdb.Conn(ctx); err != nil {
		leave()
		return bun.Conn{}, nil, err
	}
	return conn, func() { conn.Close(); leave() }, nil
}

// forUpdate locks the selected rows until the transaction ends. A database
// with a single writer (SQLite) has no row locks and needs none: it runs
// one write transaction at a time, each holding the write lock from BEGIN.
func (s *Store) forUpdate(q *bun.SelectQuery) *bun.SelectQuery {
	if s.sqlDialect.SingleWriter() {
		return q
	}
	return q.For("UPDATE")
}
