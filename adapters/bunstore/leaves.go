package bunstore

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/pgpage"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// The leaves of the verifiable log are appended by every write
// transaction that appends events, at the step of record where
// their ids are drawn and the event order lock is held (record.go): in
// the same transaction, in id order, with the next indexes. The lock that
// makes ids settle in commit order also makes the indexes consecutive: no
// other writer can append a leaf until this transaction ends, and one
// that rolls back takes its leaves with it. The log's size, the number of
// leaves, is the last leaf's idx + 1, which the lock's holder reads from
// log_leaves' primary key as it was committed last: on PostgreSQL with a
// snapshot taken after the lock (a statement of its own, or
// flagadmin_log_size of schema/postgres.sql), on MySQL by a
// locking read, on SQLite as the one writer. (A row of its own that every
// writer raised under the lock would cost more than the leaf.)
//
// A leaf's hash is leaf.LeafHash of the event as it is stored (its
// time to the millisecond, empty JSON as null, its salt), computed in Go
// (leavesOf) or, on PostgreSQL, in the INSERT from leaf.LeafParts
// (insertWithLeaves): the canonical form has one definition, the
// domain's. Beside the hash a leaf keeps what it commits to apart from
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

// leavesOf returns the leaves of events (their ids and salts set),
// without their indexes. An event whose hash cannot be computed (data or
// preData that is not JSON) is an error of kind ErrValidation, returned
// as it is.
func leavesOf(events []flagadmin.Event) ([]leafRow, error) {
	leaves := make([]leafRow, len(events))
	for i, e := range events {
		l, err := leafOf(e)
		if err != nil {
			return nil, &callbackError{fmt.Errorf("event %d: %w", i, err)}
		}
		leaves[i] = l
	}
	return leaves, nil
}

// appendLeaves appends the leaves of ch's events, whose ids are drawn, in
// t, which holds the event order lock: by COPY for a bulk insert where the
// events went by COPY, in one statement per chunk where a statement reads
// the log's size itself, else after reading it.
func (s *Store) appendLeaves(ctx context.Context, t *txn, ch *changes) error {
	if s.test.noEventOrder() || !keepLeaves {
		// A test that turns the event order lock off to show what it
		// prevents keeps no leaves: they need it.
		return nil
	}
	leaves, err := leavesOf(ch.events)
	if err != nil {
		return err
	}
	if ch.givenIDs {
		// Drawn ids ascend past every id ever drawn; given ones must also
		// pass the last leaf's, whose event may have been pruned.
		if err := s.checkAfterLastLeaf(ctx, t, leaves[0].EventID); err != nil {
			return err
		}
	}
	if ch.bulk && s.sqlDialect.CopiesEvents() {
		return s.copyLeaves(ctx, t, leaves)
	}
	if s.sqlDialect.LogSizeInStatement() {
		return appendLeavesPG(ctx, t, leaves)
	}
	size, err := s.logSizeLocked(ctx, t)
	if err != nil {
		return err
	}
	for i := range leaves {
		leaves[i].Index = size + int64(i)
	}
	for start := 0; start < len(leaves); start += s.insertChunk() {
		if err := insertLeafRows(ctx, t, leaves[start:min(len(leaves), start+s.insertChunk())]); err != nil {
			return err
		}
	}
	return nil
}

// logSizeSQL reads the log's size: the last leaf's idx + 1.
const logSizeSQL = "SELECT COALESCE(MAX(idx) + 1, 0) FROM log_leaves"

// logSizeLocked reads the log's size in t, which holds the event order
// lock: in a statement of its own, whose snapshot is taken after the lock,
// or by a locking read (sqlDialect.LatestLock), which sees the latest
// committed leaves where a plain read would see t's snapshot, which may
// predate the lock. That read locks the last leaf, which a pruner holds
// while it prunes the newest event: the deadlock that may follow is run
// again (tx.go).
func (s *Store) logSizeLocked(ctx context.Context, t *txn) (int64, error) {
	q := s.readLatest(logSizeSQL)
	var size int64
	err := t.QueryRowContext(ctx, q).Scan(&size)
	return size, err
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

// checkAfterLastLeaf refuses a given id that does not pass the last
// leaf's event id, as ErrConflict.
func (s *Store) checkAfterLastLeaf(ctx context.Context, t *txn, first int64) error {
	q := s.readLatest("SELECT COALESCE(MAX(event_id), 0) FROM log_leaves")
	var last int64
	if err := t.QueryRowContext(ctx, q).Scan(&last); err != nil {
		return err
	}
	if first <= last {
		return &callbackError{fmt.Errorf("%w: event id %d is not above the log's last (%d, pruned)", flagadmin.ErrConflict, first, last)}
	}
	return nil
}

// insertLeafRows inserts leaves with their indexes, in one statement.
func insertLeafRows(ctx context.Context, db bun.IDB, leaves []leafRow) error {
	if len(leaves) == 0 {
		return nil
	}
	_, err := db.NewInsert().Model(&leaves).Exec(ctx)
	return err
}

// pgLeafChunk bounds the leaves of one statement on PostgreSQL.
const pgLeafChunk = 1000

// appendLeavesPG appends leaves on PostgreSQL in one statement per chunk,
// which reads the log's size (flagadmin_log_size: the leaves committed
// before the lock and the transaction's own) and inserts the leaves from
// it: one round trip for a write's leaves.
func appendLeavesPG(ctx context.Context, db bun.IDB, leaves []leafRow) error {
	for start := 0; start < len(leaves); start += pgLeafChunk {
		part := leaves[start:min(len(leaves), start+pgLeafChunk)]
		var b strings.Builder
		args := make([]any, 0, 7*len(part))
		b.WriteString(`WITH o AS (SELECT flagadmin_log_size() AS start)
			INSERT INTO log_leaves (idx, event_id, hash, created_at, project, type, content)
			SELECT o.start + v.k, v.event_id, v.hash, v.created_at, v.project, v.type, v.content FROM o, (VALUES `)
		for i, l := range part {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?::bigint, ?::bigint, ?::bytea, ?::bigint, ?::text, ?::text, ?::bytea)")
			args = append(args, i, l.EventID, l.Hash, l.CreatedAt, l.Project, l.Type, l.Content)
		}
		b.WriteString(") AS v (k, event_id, hash, created_at, project, type, content)")
		if _, err := db.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// copyLeaves appends many leaves on PostgreSQL: the log's size read in
// one statement, the leaves sent with COPY on t's pgx connection.
func (s *Store) copyLeaves(ctx context.Context, t *txn, leaves []leafRow) error {
	start, err := s.logSizeLocked(ctx, t)
	if err != nil {
		return err
	}
	return pgpage.OnPgx(t.conn, func(pc *pgx.Conn) error {
		next := 0
		src := pgx.CopyFromFunc(func() ([]any, error) {
			if next == len(leaves) {
				return nil, nil
			}
			l := leaves[next]
			next++
			return []any{start + int64(next-1), l.EventID, l.Hash, l.CreatedAt, l.Project, l.Type, l.Content}, nil
		})
		_, err := pc.CopyFrom(ctx, pgx.Identifier{"log_leaves"}, []string{"idx", "event_id", "hash", "created_at", "project", "type", "content"}, src)
		return err
	})
}

// insertWithLeaves inserts rows on PostgreSQL by multi-row INSERTs that
// append their leaves in the same statement, and sets the ids the
// database draws on events (whose salts are set). The statement inserts
// the events (its trigger takes the event order lock before the first id
// is drawn), reads the log's size and inserts a leaf per event, whose
// hash PostgreSQL computes from the parts of the event's leaf input around
// its id (leaf.LeafParts): SHA-256 of 0x00, the part before, the
// id's digits and the part after, which is leaf.LeafHash. The leaf's
// tombstone is the inserted event's created_at, project and type, and its
// content commitment, the last 32 bytes of the part after (the leaf input
// ends with it). Ids are drawn in VALUES
// order; the k-th smallest is the k-th row's. The size is read once ins
// has inserted its rows (o counts them first), so under the lock, by
// flagadmin_log_size, whose snapshot holds the leaves committed before the
// lock was granted (the statement's own snapshot predates it; a size read
// with it would repeat an idx, which the primary key refuses). Keeping the tree then costs
// no round trip under the lock, which writers of events hold one at a
// time (record.go).
func (s *Store) insertWithLeaves(ctx context.Context, db bun.IDB, rows []stored.Event, events []flagadmin.Event) error {
	chunk := s.insertChunk()
	for start := 0; start < len(rows); start += chunk {
		part := rows[start:min(len(rows), start+chunk)]
		var values strings.Builder
		args := make([]any, 0, 1+4*len(part))
		args = append(args, bun.Safe(db.NewInsert().Model(&part).Returning("id, created_at, project, type").String()))
		for i := range part {
			before, after, err := leaf.LeafParts(asStored(events[start+i]))
			if err != nil {
				return &callbackError{fmt.Errorf("event %d: %w", start+i, err)}
			}
			if i > 0 {
				values.WriteString(", ")
			}
			values.WriteString("(?::bigint, ?::bytea, ?::bytea, ?::bytea)")
			args = append(args, i+1, before, after, after[len(after)-sha256.Size:])
		}
		query := `WITH ins AS (?),
			n AS (SELECT id, created_at, project, type, row_number() OVER (ORDER BY id) AS k FROM ins),
			o AS (SELECT flagadmin_log_size() AS start FROM (SELECT count(*) FROM ins) AS inserted),
			leaves AS (INSERT INTO log_leaves (idx, event_id, hash, created_at, project, type, content)
				SELECT o.start + n.k - 1, n.id, sha256('\x00'::bytea || p.before || convert_to(n.id::text, 'UTF8') || p.after),
					n.created_at, n.project, n.type, p.content
				FROM o, n JOIN (VALUES ` + values.String() + `) AS p (k, before, after, content) ON p.k = n.k)
			SELECT id FROM n ORDER BY id`
		if s.test.noEventOrder() || !keepLeaves { // see appendLeaves
			query, args = "WITH ins AS (?) SELECT id FROM ins ORDER BY id", args[:1]
		}
		var ids []int64
		if err := db.NewRaw(query, args...).Scan(ctx, &ids); err != nil {
			return err
		}
		if len(ids) != len(part) {
			return fmt.Errorf("inserted %d events, got %d ids", len(part), len(ids))
		}
		for i, id := range ids {
			events[start+i].ID = id
		}
	}
	return nil
}
