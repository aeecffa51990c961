package bunstore

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

var _ flagadmin.VersionedStore = (*Store)(nil)

// The change counter (flagadmin.VersionedStore.Version). store_versions
// holds versionShards rows (shard, v), and the version is the sum of v.
// Every write transaction adds 1 to one row, drawn at random, in record,
// after the summaries and right before its events draw their ids: the row
// stays locked only from there to the commit, while the transaction waits
// for no other lock but the event order lock, whose holder waits for none
// (the lock order, record.go), so it cannot take part in a deadlock, and
// concurrent writers that drew different rows do not queue. A transaction that rolls back takes its
// increment with it. SQLite's writers take turns anyway and all use row 0.
//
// Version reads the sum in one statement, which sees one snapshot of the
// table on every database: committed increments only, so the sum never
// decreases.

// versionShards is the number of rows of store_versions.
const versionShards = 16

// versionSQL reads the version. It is a constant text, kept prepared
// (QueryPrepared): this is read before every cached answer.
const versionSQL = "SELECT COALESCE(SUM(v), 0) FROM store_versions"

// Version implements flagadmin.VersionedStore.
func (s *Store) Version(ctx context.Context) (int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	v, err := sqlq.One(ctx, s.rdb, s.sqlDialect.QueryPrepared, sqlq.F(versionSQL), sqlq.Value[int64])
	return v, s.fail("version", err)
}

// versionShard draws the row of store_versions a transaction raises: row
// 0 where a single writer leaves no contention to spread.
func (s *Store) versionShard() int {
	if s.sqlDialect.SingleWriter() {
		return 0
	}
	return rand.IntN(versionShards)
}

// bumpVersion raises the version in t, once per transaction: one row of
// store_versions, drawn at random (row 0 on SQLite), or for a pruning
// batch the row no writer raises (prune.go).
func (s *Store) bumpVersion(ctx context.Context, t *txn, pruning bool) error {
	if t.versionRaised {
		return nil
	}
	shard := s.versionShard()
	if pruning {
		shard = pruneVersionShard
	}
	res, err := t.ExecContext(ctx, "UPDATE store_versions SET v = v + 1 WHERE shard = ?", shard)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("raising row %d of store_versions: %d rows changed (%v)", shard, n, err)
	}
	t.versionRaised = true
	return nil
}

// freshFeatureSQL is the earliest createdAt of one type's fresh features
// from a cut-off on: the first entry of features_fresh in that range.
const freshFeatureSQL = `SELECT ? AS type, (SELECT created_at FROM features
	WHERE archived_at IS NULL AND NOT stale AND type = ? AND created_at >= ?
	ORDER BY created_at LIMIT 1) AS created_at`

// OldestFreshFeatures implements flagadmin.VersionedStore in one statement:
// per type, one ordered lookup in the partial index features_fresh (on
// MySQL, which indexes every feature, the walk also skips the archived and
// stale features created since the cut-off).
func (s *Store) OldestFreshFeatures(ctx context.Context, notBefore map[flagadmin.FeatureType]time.Time) (map[flagadmin.FeatureType]time.Time, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	out := map[flagadmin.FeatureType]time.Time{}
	if len(notBefore) == 0 {
		return out, nil
	}
	parts := make([]string, 0, len(notBefore))
	args := make([]any, 0, 3*len(notBefore))
	for _, t := range slices.Sorted(maps.Keys(notBefore)) {
		parts = append(parts, freshFeatureSQL)
		args = append(args, string(t), string(t), stored.CeilMillis(notBefore[t]))
	}
	var rows []struct {
		Type      string `bun:"type"`
		CreatedAt *int64 `bun:"created_at"`
	}
	if err := s.rdb.NewRaw(strings.Join(parts, " UNION ALL "), args...).Scan(ctx, &rows); err != nil {
		return nil, s.fail("oldest fresh features", err)
	}
	for _, r := range rows {
		if r.CreatedAt != nil {
			out[flagadmin.FeatureType(r.Type)] = stored.Time(*r.CreatedAt)
		}
	}
	return out, nil
}
