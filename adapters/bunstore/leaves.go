package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/sync/errgroup"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/dberr"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// The leaves of the verifiable log are appended after their events
// commit, by one path: appendIn reads the events past the last leaf in id
// order and appends a leaf for each, with the next indexes; the store's
// appender runs it in transactions of its own (appendLeaves), Load in its
// own transaction, so a load commits with its leaves. One exception: on a
// database with a single writer, a bulk write whose log has a leaf for
// every event stored appends its events' leaves in its transaction
// (appendWithLeaves), as appendIn would compute them from their rows:
// no other transaction can come between. A writer of events
// holds the
// event order lock (record.go) only to insert its events and commit; the
// leaves cost it nothing under the lock, which is the ceiling of the
// store's write throughput.
//
// Commit order is id order (record.go), so the events past the last leaf,
// read in id order, are appended in the order they were written, and no
// event that commits later can take a smaller id than one already
// appended. On MySQL, where a snapshot can see a later commit and miss an
// earlier one, the read stops at the settled id (export.go's settled).
//
// Each commit that wrote events wakes the store's appender (a goroutine
// started by Open), which appends everything pending in batches, so that
// the leaves of many writes go in one transaction. Every read of the log
// in this store first waits for the leaves of its own writes
// (settleLeaves), so a write that returned is in the log as this store
// reads it; a proof of an event written by another server on the same
// database that has no leaf yet appends the pending leaves itself
// (LeafIndex, and LogLeaves past the last leaf). A server that stopped
// between a commit and its append leaves its events to the next append of
// any server, and Open appends what is pending (unless
// WithoutAppendingOthers: a verifier reads the log as the database holds
// it). Retention prunes only events whose leaves are appended (prune.go).
//
// Two appenders on one database (two servers) can read the same last leaf;
// the second to insert collides with the first on log_leaves' primary key
// and runs again past the leaves the first appended.
//
// A leaf's hash is leaf.LeafHash of the event as it is stored (its
// time to the millisecond, empty JSON as null, its salt), read back from
// its row. Beside the hash a leaf keeps what it commits to apart from
// the rest of the event, its tombstone: the event's time, project and
// type, and its content commitment, which stay when the event is pruned.

// leafRow is a row of log_leaves; Salt is read from the event's row
// (nil once it is pruned).
type leafRow struct {
	bun.BaseModel `bun:"table:log_leaves"`

	Index     int64   `bun:"idx,pk"`
	EventID   int64   `bun:"event_id"`
	Hash      []byte  `bun:"hash"`
	Pruned    bool    `bun:"pruned"`
	CreatedAt int64   `bun:"created_at"`
	Project   *string `bun:"project"`
	Type      string  `bun:"type"`
	Content   []byte  `bun:"content"`
	Salt      []byte  `bun:"salt,scanonly"`
}

// logLeaf returns the leaf of the row.
func (r leafRow) logLeaf() (vlog.Leaf, error) {
	h, err := hash32(r.Hash)
	if err != nil {
		return vlog.Leaf{}, fmt.Errorf("leaf %d: %w", r.Index, err)
	}
	c, err := hash32(r.Content)
	if err != nil {
		return vlog.Leaf{}, fmt.Errorf("leaf %d: content: %w", r.Index, err)
	}
	return vlog.Leaf{Index: r.Index, EventID: r.EventID, Hash: h, Pruned: r.Pruned,
		CreatedAt: stored.Time(r.CreatedAt), Project: r.Project, Type: r.Type, Content: c, Salt: r.Salt}, nil
}

// asStored returns e as the store reads it back (stored.AsStored).
func asStored(e flagadmin.Event) flagadmin.Event { return stored.AsStored(e) }

// leafOf returns the leaf of e as stored (its id and salt set), without
// its index. The error is leaf.ContentCommitment's.
func leafOf(e flagadmin.Event) (leafRow, error) {
	e = asStored(e)
	content, err := leaf.ContentCommitment(e)
	if err != nil {
		return leafRow{}, err
	}
	hash := leaf.LeafOf(vlog.Leaf{EventID: e.ID, CreatedAt: e.CreatedAt, Project: e.Project, Type: e.Type, Content: content})
	return leafRow{EventID: e.ID, Hash: hash[:], CreatedAt: stored.Millis(e.CreatedAt), Project: e.Project, Type: e.Type, Content: content[:]}, nil
}

// checkLeaves returns an error of kind ErrValidation, as a callbackError,
// for an event whose leaf cannot be computed (data or preData that is not
// JSON, a salt of another size): refused when it is written, it would
// stop the appender for good.
func checkLeaves(events []flagadmin.Event) error {
	for i, e := range events {
		if _, err := leaf.ContentCommitment(asStored(e)); err != nil {
			return &callbackError{fmt.Errorf("event %d: %w", i, err)}
		}
	}
	return nil
}

// leafEventColumns are the columns of events a leaf commits to.
var leafEventColumns = append(slices.Clone(stored.EventColumns), "salt")

// gatherFor is how long the appender, woken by a write, waits for more
// writes to append with it. Reads of the log do not wait for it: they
// append what is pending themselves (settleLeaves).
const gatherFor = 5 * time.Millisecond

// appendBatch bounds the events one append transaction reads and the
// leaves it inserts.
const appendBatch = 5000

// leafAppender is the store's state of appending leaves.
type leafAppender struct {
	// mu is held by the one append of the store running.
	mu sync.Mutex
	// written counts the commits that wrote events; appended is the
	// count the last complete append began after.
	written, appended atomic.Uint64
	// wake holds a request to append, for run.
	wake chan struct{}
	// stop ends run, which closes done.
	stop, done chan struct{}
	// retry is how long run waits to try again after a failure.
	retry time.Duration
	// ownOnly: the leaves of the store's own writes only
	// (WithoutAppendingOthers).
	ownOnly bool
	// atStart is what written counts before the store's first write: 1
	// for the append at the start, 0 without it.
	atStart uint64
}

// newLeafAppender returns an appender that is not running.
func newLeafAppender() *leafAppender {
	return &leafAppender{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), retry: time.Second}
}

// wrote records a commit that wrote events and wakes the appender.
func (a *leafAppender) wrote() {
	if a == nil {
		return
	}
	a.written.Add(1)
	a.wakeUp()
}

// wakeUp asks run to append, unless it is asked already.
func (a *leafAppender) wakeUp() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// startAppender starts the store's appender, which appends the leaves of
// the events committed past the last leaf: first those a stopped server
// left without leaves (unless WithoutAppendingOthers), then, whenever a write wakes it, those of the
// writes since. After a failure it tries again while this store has
// leaves to append.
func (s *Store) startAppender() {
	a := s.leaves
	// The start counts as a write, so that reads wait for it.
	if !a.ownOnly {
		a.atStart = 1
		a.written.Add(a.atStart)
	}
	go func() {
		defer close(a.done)
		if err := s.appendPending(context.Background()); err != nil {
			// On a database this store may only read, reads go on
			// without: the start's append is not tried again.
			a.appended.CompareAndSwap(0, 1)
			s.log.Debug("bunstore: could not append the leaves a stopped server left; the next write appends them", "cause", err.Error())
		}
		for {
			select {
			case <-a.stop:
				return
			case <-a.wake:
			}
			// The writes of the next moment go in the same batch: a
			// transaction of their own for the leaves of each write
			// would cost the database a commit per write.
			select {
			case <-a.stop:
				return
			case <-time.After(gatherFor):
			}
			if err := s.appendPending(context.Background()); err != nil {
				// An outage of the database is told by every request
				// that meets it; the appender waits it out.
				level := slog.LevelWarn
				if errors.Is(err, flagadmin.ErrUnavailable) {
					level = slog.LevelDebug
				}
				s.log.Log(context.Background(), level, "bunstore: appending the log's leaves failed; trying again", "cause", err.Error(), "in", a.retry)
				select {
				case <-a.stop:
					return
				case <-time.After(a.retry):
					a.wakeUp()
				}
			}
		}
	}()
}

// closeBound bounds the append of the leaves still pending when the store
// closes.
const closeBound = 10 * time.Second

// stopAppender appends the leaves of the store's writes still pending
// (none when it wrote nothing), then stops the appender and waits for it to end.
func (s *Store) stopAppender() {
	select {
	case <-s.leaves.stop:
		return
	default:
	}
	if s.leaves.written.Load() > s.leaves.atStart {
		ctx, cancel := context.WithTimeout(context.Background(), closeBound)
		if err := s.settleLeaves(ctx); err != nil {
			s.log.Warn("bunstore: closing with leaves not appended; the next server to start appends them", "cause", err.Error())
		}
		cancel()
	}
	close(s.leaves.stop)
	<-s.leaves.done
}

// settleLeaves returns once the leaves of every event this store has
// committed are appended, appending them itself when they are not.
func (s *Store) settleLeaves(ctx context.Context) error {
	if s.leaves == nil {
		return nil
	}
	if s.leaves.appended.Load() >= s.leaves.written.Load() {
		return nil
	}
	return s.appendPending(ctx)
}

// appendBehind appends the leaves of the events committed past the last
// leaf by another server on the same database that has not appended them
// yet (or stopped before it did), and reports whether there were any.
func (s *Store) appendBehind(ctx context.Context) (bool, error) {
	if s.leaves == nil || s.leaves.ownOnly {
		return false, nil
	}
	var behind bool
	err := s.rdb.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM events WHERE id > (SELECT COALESCE(MAX(event_id), 0) FROM log_leaves))").Scan(&behind)
	if err != nil || !behind {
		return false, err
	}
	s.leaves.mu.Lock()
	defer s.leaves.mu.Unlock()
	return true, s.appendAll(ctx)
}

// appendPending appends the leaves of every committed event past the last
// leaf, unless an append that began after the last write already did.
func (s *Store) appendPending(ctx context.Context) error {
	a := s.leaves
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.written.Load()
	if a.appended.Load() >= w {
		return nil
	}
	if err := s.appendAll(ctx); err != nil {
		return err
	}
	a.appended.Store(w)
	return nil
}

// appendAll appends the leaves of every committed event past the last
// leaf, appendBatch at a time. The caller holds a.mu.
func (s *Store) appendAll(ctx context.Context) error {
	if !keepLeaves {
		return nil
	}
	for {
		n, err := s.appendLeaves(ctx)
		if err != nil || n < appendBatch {
			return err
		}
	}
}

// appendLeaves appends the leaves of at most appendBatch committed events
// past the last leaf, in a transaction of its own, and returns how many.
// Two appenders that read the same last leaf collide on log_leaves'
// primary key or its event index: the one that loses runs again.
func (s *Store) appendLeaves(ctx context.Context) (int, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	settled, err := s.settled(ctx)
	if err != nil {
		return 0, s.fail("append leaves", err)
	}
	s.prepareInserts(ctx)
	for attempt := 1; ; attempt++ {
		var n int
		err = s.inConnTx(ctx, func(ctx context.Context, t *txn) error {
			// The leaves are computed again from their events, which are
			// committed: a commit lost to a crash of the database is
			// appended again, the same, by the next append. So it need
			// not wait for the disk where the database can say so.
			if async := s.sqlDialect.AsyncCommit(); async != "" {
				if _, err := t.ExecContext(ctx, "SELECT 1"+async); err != nil {
					return err
				}
			}
			n, err = s.appendIn(ctx, t, settled)
			return err
		})
		if err == nil {
			return n, nil
		}
		if kind, retry := dberr.Classify(err); (retry || errors.Is(kind, flagadmin.ErrConflict)) && attempt < maxAttempts && ctx.Err() == nil {
			continue
		}
		return 0, s.fail("append leaves", err)
	}
}

// appendIn appends, in tx, the leaves of at most appendBatch events past
// the last leaf (and within settled, when not empty), and returns how
// many: the one write path of leaves, which Load runs in its own
// transaction.
func (s *Store) appendIn(ctx context.Context, tx *txn, settled sqlq.Fragment) (int, error) {
	// One aggregate a statement: SQLite reads a lone MAX from the index's
	// end, but scans the whole table for two (a tenth of a second at
	// 300,000 leaves, on every append).
	var size, last int64
	if err := tx.QueryRowContext(ctx, s.readLatest(logSizeSQL)).Scan(&size); err != nil {
		return 0, err
	}
	if err := tx.QueryRowContext(ctx, s.readLatest(lastLeafEventSQL)).Scan(&last); err != nil {
		return 0, err
	}
	var rows []stored.Event
	sel := tx.NewSelect().Model(&rows).Column(leafEventColumns...).Where("id > ?", last).OrderExpr("id").Limit(appendBatch)
	if settled.Text != "" {
		sel = sel.Where(settled.Text, settled.Args...)
	}
	if err := sel.Scan(ctx); err != nil {
		return 0, err
	}
	leaves, err := leavesOf(rows, size)
	if err != nil {
		return 0, err
	}
	return len(leaves), s.insertLeaves(ctx, tx, leaves)
}

// parallelLeaves is the smallest batch whose leaves leavesOf computes on
// every core.
const parallelLeaves = 256

// leavesOf returns the leaves of rows, the first at index size. A large
// batch (a bulk load's, an appender's after a stop) is split over every
// core: a leaf's hash (RFC 8785 of the event, then SHA-256) takes about
// 40 µs, most of the time of appending a million leaves.
func leavesOf(rows []stored.Event, size int64) ([]leafRow, error) {
	leaves := make([]leafRow, len(rows))
	compute := func(from, to int) error {
		for i := from; i < to; i++ {
			e, err := rows[i].Event()
			if err != nil {
				return err
			}
			e.Salt = rows[i].Salt
			if leaves[i], err = leafOf(e); err != nil {
				return fmt.Errorf("event %d: %w", e.ID, err)
			}
			leaves[i].Index = size + int64(i)
		}
		return nil
	}
	workers := runtime.GOMAXPROCS(0)
	if len(rows) < parallelLeaves || workers == 1 {
		return leaves, compute(0, len(rows))
	}
	var g errgroup.Group
	per := (len(rows) + workers - 1) / workers
	for from := 0; from < len(rows); from += per {
		g.Go(func() error { return compute(from, min(from+per, len(rows))) })
	}
	return leaves, g.Wait()
}

// leafColumns are the columns of log_leaves an insert fills, in the
// order of leafRow.values.
var leafColumns = []string{"idx", "event_id", "hash", "pruned", "created_at", "project", "type", "content"}

// values appends the values of the row's leafColumns to args.
func (r *leafRow) values(args []any) []any {
	return append(args, r.Index, r.EventID, r.Hash, r.Pruned, r.CreatedAt, r.Project, r.Type, r.Content)
}

// insertLeaves inserts leaves with their indexes, in t: by COPY where the
// database has it (sqlDialect.CopiesEvents: each leaf's hash and content
// sent in binary, where an INSERT's text wrote them in hex for the
// database to parse; BenchmarkAppendLeaves on PostgreSQL, 34-38 against
// 11-13 us a leaf appended); else by the prepared INSERT where there is
// one (preparedInserts), the rest by multi-row INSERTs. COPY encodes each
// row as it is returned, so the rows share one slice of values.
func (s *Store) insertLeaves(ctx context.Context, tx *txn, leaves []leafRow) error {
	if s.sqlDialect.CopiesEvents() {
		next := 0
		var args []any
		return s.sqlDialect.CopyFrom(ctx, tx.conn, "log_leaves", leafColumns, func() ([]any, error) {
			if next == len(leaves) {
				return nil, nil
			}
			args = leaves[next].values(args[:0])
			next++
			return args, nil
		})
	}
	done, err := s.inserts.insert(ctx, tx, func(st *insertStatements) *sql.Stmt { return st.leaves }, len(leaves),
		func(args []any, i int) []any { return leaves[i].values(args) })
	if err != nil {
		return err
	}
	leaves = leaves[done:]
	for start := 0; start < len(leaves); start += s.insertChunk() {
		part := leaves[start:min(len(leaves), start+s.insertChunk())]
		if _, err := tx.NewInsert().Model(&part).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// readLatest makes query, a SELECT in a write transaction that holds a
// lock its writers take, read what they committed before it: a locking
// read where a plain read would see the transaction's snapshot.
func (s *Store) readLatest(query string) string {
	if lock := s.sqlDialect.LatestLock(); lock != "" {
		return query + " FOR " + lock
	}
	return query
}

// logSizeSQL reads the log's size: the last leaf's idx + 1.
const logSizeSQL = "SELECT COALESCE(MAX(idx) + 1, 0) FROM log_leaves"

// lastLeafEventSQL reads the id of the last event with a leaf (0 for
// none).
const lastLeafEventSQL = "SELECT COALESCE(MAX(event_id), 0) FROM log_leaves"

// lastEventIDSQL reads the id of the last event stored (0 for none).
const lastEventIDSQL = "SELECT COALESCE(MAX(id), 0) FROM events"

// leavesUpToDate reads, in t, the log's size and whether every event
// stored has a leaf: on a database with a single writer, no other
// transaction appends meanwhile.
func (s *Store) leavesUpToDate(ctx context.Context, t *txn) (size int64, upToDate bool, err error) {
	var lastLeaf, last int64
	if err := t.QueryRowContext(ctx, logSizeSQL).Scan(&size); err != nil {
		return 0, false, err
	}
	if err := t.QueryRowContext(ctx, lastLeafEventSQL).Scan(&lastLeaf); err != nil {
		return 0, false, err
	}
	if err := t.QueryRowContext(ctx, lastEventIDSQL).Scan(&last); err != nil {
		return 0, false, err
	}
	return size, last <= lastLeaf, nil
}

// appendWithLeaves inserts ch's events and appends their leaves in t, the
// first at index size: a bulk write on a database with a single writer
// whose log has a leaf for every event stored (leavesUpToDate), which
// then needs no append of its own after the commit, nor a read of the
// events it wrote. The leaves of events with given ids are computed while
// the events are inserted, the others' once their ids are drawn; an event
// whose leaf cannot be computed fails the write, as checkLeaves does.
func (s *Store) appendWithLeaves(ctx context.Context, t *txn, ch *changes, size int64) error {
	if !ch.givenIDs {
		if err := s.appendEvents(ctx, t, ch); err != nil {
			return err
		}
		leaves, err := eventLeaves(ch.events, size)
		if err != nil {
			return err
		}
		return s.insertLeaves(ctx, t, leaves)
	}
	type computed struct {
		leaves []leafRow
		err    error
	}
	done := make(chan computed, 1)
	events := slices.Clone(ch.events) // appendEvents may change ch.events
	go func() {
		leaves, err := eventLeaves(events, size)
		done <- computed{leaves, err}
	}()
	err := s.appendEvents(ctx, t, ch)
	c := <-done
	if c.err != nil {
		return c.err
	}
	if err != nil {
		return err
	}
	return s.insertLeaves(ctx, t, c.leaves)
}

// eventLeaves returns the leaves of events, which carry their ids and
// salts, as appendIn computes them from their rows: the first at index
// size. An error computing a leaf is of kind ErrValidation.
func eventLeaves(events []flagadmin.Event, size int64) ([]leafRow, error) {
	rows := make([]stored.Event, len(events))
	for i, e := range events {
		r, err := stored.EventOf(e)
		if err != nil {
			return nil, err // as the insert's
		}
		rows[i] = r
	}
	leaves, err := leavesOf(rows, size)
	if err != nil {
		return nil, &callbackError{err}
	}
	return leaves, nil
}
