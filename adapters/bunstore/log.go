package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

var _ vlog.Store = (*Store)(nil)

// The verifiable log's reads and its stored hashes and checkpoints
// (vlog.Store): leaves.go appends the leaves, prune.go prunes. Each read
// of the leaves first waits for those of the store's own writes
// (settleLeaves).
// Tables (schema/*.sql): log_leaves (idx, event_id,
// hash, pruned, and the tombstone: created_at, project, type, content),
// log_hashes (level, idx, hash), log_checkpoints and log_holds; the size
// is the last leaf's idx + 1 (leaves.go).

// LogSize implements vlog.Store.
func (s *Store) LogSize(ctx context.Context) (int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.settleLeaves(ctx); err != nil {
		return 0, err
	}
	var n int64
	if err := s.rdb.DB.QueryRowContext(ctx, logSizeSQL).Scan(&n); err != nil {
		return 0, s.fail("log size", err)
	}
	return n, nil
}

// LogLeaves implements vlog.Store: a range of log_leaves' primary
// key.
func (s *Store) LogLeaves(ctx context.Context, start, end int64) ([]vlog.Leaf, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.settleLeaves(ctx); err != nil {
		return nil, err
	}
	start = max(start, 0)
	if start >= end {
		return nil, nil
	}
	var rows []leafRow
	read := func() error {
		rows = rows[:0]
		return s.rdb.NewRaw(leafColumnsSQL+" WHERE l.idx >= ? AND l.idx < ? ORDER BY l.idx", start, end).Scan(ctx, &rows)
	}
	err := read()
	if err == nil && int64(len(rows)) < end-start {
		// Past the last leaf: events another server wrote may be
		// waiting for theirs (and that server may have appended them
		// since the read).
		if _, err = s.appendBehind(ctx); err == nil {
			err = read()
		}
	}
	if err != nil {
		return nil, s.fail("log leaves", err)
	}
	out := make([]vlog.Leaf, 0, len(rows))
	for _, r := range rows {
		l, err := r.logLeaf()
		if err != nil {
			return nil, s.fail("log leaves", err)
		}
		out = append(out, l)
	}
	return out, nil
}

// leafColumnsSQL reads leaves (leafRow) with their events' salts: a
// pruned event's leaf has none.
const leafColumnsSQL = "SELECT l.idx, l.event_id, l.hash, l.pruned, l.created_at, l.project, l.type, l.content, e.salt " +
	"FROM log_leaves l LEFT JOIN events e ON e.id = l.event_id"

// hash32 is a stored hash as the domain holds it.
func hash32(b []byte) ([32]byte, error) {
	if len(b) != 32 {
		return [32]byte{}, fmt.Errorf("a stored hash of %d bytes, want 32", len(b))
	}
	return [32]byte(b), nil
}

// LeafIndex implements vlog.Store: a lookup in log_leaves_event, after
// appending the leaves of events past the last one when it finds none.
func (s *Store) LeafIndex(ctx context.Context, eventID int64) (int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.settleLeaves(ctx); err != nil {
		return 0, err
	}
	var idx int64
	read := func() error {
		return s.rdb.QueryRowContext(ctx, "SELECT idx FROM log_leaves WHERE event_id = ?", eventID).Scan(&idx)
	}
	err := read()
	if errors.Is(err, sql.ErrNoRows) {
		// The event may be one another server wrote, waiting for its leaf
		// (or appended since the read).
		if _, err = s.appendBehind(ctx); err == nil {
			err = read()
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return 0, flagadmin.ErrNotFound
	}
	if err != nil {
		return 0, s.fail("leaf index", err)
	}
	return idx, nil
}

// logRangesPerStatement bounds the ranges of one statement of LogHashes
// (SQLite allows 500 terms in a compound SELECT); a proof needs a few
// dozen.
const logRangesPerStatement = 200

// LogHashes implements vlog.Store in one statement: a UNION ALL
// of one range of a primary key per range asked for (log_leaves for level
// 0, log_hashes above), each row tagged with its range.
func (s *Store) LogHashes(ctx context.Context, ranges []vlog.HashRange) ([][][32]byte, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.settleLeaves(ctx); err != nil {
		return nil, err
	}
	out := make([][][32]byte, len(ranges))
	for first := 0; first < len(ranges); first += logRangesPerStatement {
		if err := s.readHashes(ctx, ranges, first, min(len(ranges), first+logRangesPerStatement), out); err != nil {
			return nil, s.fail("log hashes", err)
		}
	}
	return out, nil
}

// readHashes reads ranges[first:end] into out, in one statement.
func (s *Store) readHashes(ctx context.Context, ranges []vlog.HashRange, first, end int, out [][][32]byte) error {
	var parts []string
	var args []any
	for i := first; i < end; i++ {
		r := ranges[i]
		start := max(r.Start, 0)
		if start >= r.End {
			continue
		}
		if r.Level == 0 {
			parts = append(parts, "SELECT ? AS r, idx, hash FROM log_leaves WHERE idx >= ? AND idx < ?")
			args = append(args, i, start, r.End)
		} else {
			parts = append(parts, "SELECT ? AS r, idx, hash FROM log_hashes WHERE level = ? AND idx >= ? AND idx < ?")
			args = append(args, i, r.Level, start, r.End)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	var rows []struct {
		R    int    `bun:"r"`
		Idx  int64  `bun:"idx"`
		Hash []byte `bun:"hash"`
	}
	if err := s.rdb.NewRaw(strings.Join(parts, " UNION ALL ")+" ORDER BY r, idx", args...).Scan(ctx, &rows); err != nil {
		return err
	}
	for _, row := range rows {
		// Consecutive from the range's start: a stored level has no gaps,
		// but stop at one all the same.
		run := out[row.R]
		if row.Idx != max(ranges[row.R].Start, 0)+int64(len(run)) {
			continue
		}
		h, err := hash32(row.Hash)
		if err != nil {
			return err
		}
		out[row.R] = append(run, h)
	}
	return nil
}

// logHashRow is a row of log_hashes.
type logHashRow struct {
	bun.BaseModel `bun:"table:log_hashes"`

	Level int    `bun:"level,pk"`
	Index int64  `bun:"idx,pk"`
	Hash  []byte `bun:"hash"`
}

// SaveLogHashes implements vlog.Store. The hashes are inserted
// ignoring those already stored (another server saving the same ones).
func (s *Store) SaveLogHashes(ctx context.Context, level int, start int64, hashes [][32]byte) error {
	if level < 1 {
		return fmt.Errorf("bunstore: SaveLogHashes: level %d: leaves are written with their events", level)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	have, err := s.hashCount(ctx, s.db, level)
	if err != nil {
		return s.fail("save log hashes", err)
	}
	if start < 0 || start > have {
		return fmt.Errorf("bunstore: SaveLogHashes: level %d holds %d hashes, cannot store from %d", level, have, start)
	}
	skip := have - start
	if skip >= int64(len(hashes)) {
		return nil
	}
	rows := make([]logHashRow, 0, int64(len(hashes))-skip)
	for i := skip; i < int64(len(hashes)); i++ {
		rows = append(rows, logHashRow{Level: level, Index: start + i, Hash: hashes[i][:]})
	}
	for from := 0; from < len(rows); from += s.insertChunk() {
		part := rows[from:min(len(rows), from+s.insertChunk())]
		if _, err := s.sqlDialect.IgnoreDuplicates(s.db.NewInsert().Model(&part)).Exec(ctx); err != nil {
			return s.fail("save log hashes", err)
		}
	}
	return nil
}

// hashCount is how many hashes of level (1 or more) are stored: they are
// consecutive from 0, so the largest index plus one.
func (s *Store) hashCount(ctx context.Context, db bun.IDB, level int) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, "SELECT COALESCE(MAX(idx) + 1, 0) FROM log_hashes WHERE level = ?", level).Scan(&n)
	return n, err
}

// LogHashCount implements vlog.Store.
func (s *Store) LogHashCount(ctx context.Context, level int) (int64, error) {
	if level == 0 {
		return s.LogSize(ctx)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	n, err := s.hashCount(ctx, s.rdb, level)
	return n, s.fail("log hash count", err)
}

// checkpointRow is a row of log_checkpoints.
type checkpointRow struct {
	bun.BaseModel `bun:"table:log_checkpoints"`

	Size     int64  `bun:"size,pk"`
	Root     []byte `bun:"root"`
	Note     []byte `bun:"note"`
	SignedAt int64  `bun:"signed_at"`
}

// SaveCheckpoint implements vlog.Store: one checkpoint per size,
// the first saved (another server's of the same size states the same).
func (s *Store) SaveCheckpoint(ctx context.Context, c vlog.Checkpoint) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	row := &checkpointRow{Size: c.Size, Root: c.Root[:], Note: c.Note, SignedAt: stored.Millis(c.SignedAt)}
	_, err := s.sqlDialect.IgnoreDuplicates(s.db.NewInsert().Model(row)).Exec(ctx)
	return s.fail("save checkpoint", err)
}

// LatestCheckpoint implements vlog.Store.
func (s *Store) LatestCheckpoint(ctx context.Context) (vlog.Checkpoint, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var rows []checkpointRow
	if err := s.rdb.NewRaw("SELECT size, root, note, signed_at FROM log_checkpoints ORDER BY size DESC LIMIT 1").Scan(ctx, &rows); err != nil {
		return vlog.Checkpoint{}, s.fail("latest checkpoint", err)
	}
	if len(rows) == 0 {
		return vlog.Checkpoint{}, flagadmin.ErrNotFound
	}
	r := rows[0]
	root, err := hash32(r.Root)
	if err != nil {
		return vlog.Checkpoint{}, s.fail("latest checkpoint", err)
	}
	return vlog.Checkpoint{Size: r.Size, Root: root, Note: r.Note, SignedAt: stored.Time(r.SignedAt)}, nil
}

var _ vlog.ProofReader = (*Store)(nil)

// ReadLogProof implements vlog.ProofReader in one statement, when the
// summaries read proofs (summaries.ReadProof: the ProofReads tuning);
// the event is selected by the search's filter (s.filter).
func (s *Store) ReadLogProof(ctx context.Context, q vlog.ProofQuery) (vlog.ProofRows, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.settleLeaves(ctx); err != nil {
		return vlog.ProofRows{}, err
	}
	var filter sqlq.Fragment
	if q.Event != nil {
		filter = s.filter(*q.Event)
	}
	out, read, err := s.summaries.ReadProof(ctx, s.rdb, q, filter)
	if !read {
		return vlog.ProofRows{}, fmt.Errorf("bunstore: the %s tuning is off: %w", ProofReads, errors.ErrUnsupported)
	}
	return out, s.fail("read log proof", err)
}
