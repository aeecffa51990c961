package bunstore

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
)

var _ flagadmin.VersionedStore = (*Store)(nil)

// The change counter (flagadmin.VersionedStore.Version). store_versions
// holds versionShards rows (shard, v), and the version is the sum of v.
// Every write transaction adds 1 to one row, drawn at random, as its last
// statement (inTx) or, when it appends events, right before the INSERT
// that draws their ids (prepareDraw, copyEvents): the row stays locked only
// from there to the commit, while the transaction waits for no other lock
// but the event order lock, whose holder waits for none (eventorder.go), so
// it cannot take part in a deadlock, and concurrent writers that drew
// different rows do not queue. A transaction that rolls back takes its
// increment with it. SQLite's writers take turns anyway and all use row 0.
//
// Version reads the sum in one statement, which sees one snapshot of the
// table on every database: committed increments only, so the sum never
// decreases.

// versionShards is the number of rows of store_versions.
const versionShards = 16

// versionSchema is the table of the change counter.
var versionSchema = []table{{name: "store_versions", body: `
		shard SMALLINT NOT NULL PRIMARY KEY,
		v BIGINT NOT NULL`}}

// versionSQL reads the version. It is a constant text, run under bun on the
// database/sql pool: this is read before every cached answer.
const versionSQL = "SELECT COALESCE(SUM(v), 0) FROM store_versions"

// errNothingWritten is returned by a write transaction's function that
// decided to write nothing: inTx rolls the transaction back, leaves the
// version alone, and returns nil.
var errNothingWritten = errors.New("bunstore: nothing written")

// Version implements flagadmin.VersionedStore.
func (s *Store) Version(ctx context.Context) (int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var v int64
	if err := s.rdb.DB.QueryRowContext(ctx, versionSQL).Scan(&v); err != nil {
		return 0, s.fail("version", err)
	}
	return v, nil
}

// versionShard draws the row of store_versions a transaction raises.
func (s *Store) versionShard() int {
	if s.dialect == dialect.SQLite {
		return 0
	}
	return rand.IntN(versionShards)
}

// bumpedKey keys, in the context of an inTx transaction, whether the
// transaction has raised the version yet (a *bool).
type bumpedKey struct{}

// bumpVersionOnce raises the version in tx unless the transaction of ctx
// (inTx) already did.
func (s *Store) bumpVersionOnce(ctx context.Context, tx bun.IDB) error {
	bumped, _ := ctx.Value(bumpedKey{}).(*bool)
	if bumped != nil && *bumped {
		return nil
	}
	if err := s.bumpVersion(ctx, tx); err != nil {
		return err
	}
	if bumped != nil {
		*bumped = true
	}
	return nil
}

// bumpVersion raises the version in the transaction tx.
func (s *Store) bumpVersion(ctx context.Context, tx bun.IDB) error {
	_, err := tx.ExecContext(ctx, "UPDATE store_versions SET v = v + 1 WHERE shard = ?", s.versionShard())
	return err
}

// bumpVersionPgx is bumpVersion in a pgx transaction (the COPY path).
func (s *Store) bumpVersionPgx(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "UPDATE store_versions SET v = v + 1 WHERE shard = $1", s.versionShard())
	return err
}

// migrateVersions is migration store_versions: the table and its rows.
// Row 0 starts at the current time in Unix milliseconds rather than 0, so
// that after a Down and an Up the version does not fall back below the
// readings processes may still hold (unless the database saw more than one
// write transaction per millisecond since the first Up). It can run again
// after a failure part-way (MySQL cannot roll DDL back): only missing rows
// are added.
func migrateVersions(ctx context.Context, db *bun.DB) error {
	if err := createSchema(ctx, db, versionSchema); err != nil {
		return err
	}
	fill := func(ctx context.Context, tx bun.IDB) error {
		var have []int
		if err := tx.NewSelect().Table("store_versions").Column("shard").Scan(ctx, &have); err != nil {
			return err
		}
		for shard := range versionShards {
			if slices.Contains(have, shard) {
				continue
			}
			start := int64(0)
			if shard == 0 {
				start = time.Now().UnixMilli()
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO store_versions (shard, v) VALUES (?, ?)", shard, start); err != nil {
				return err
			}
		}
		return nil
	}
	if db.Dialect().Name() == dialect.SQLite {
		return fill(ctx, db) // already inside the migration lock's transaction
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return fill(ctx, tx) })
}

// unmigrateVersions drops store_versions.
func unmigrateVersions(ctx context.Context, db *bun.DB) error {
	return dropSchema(ctx, db, versionSchema)
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
		args = append(args, string(t), string(t), ceilMillis(notBefore[t]))
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
			out[flagadmin.FeatureType(r.Type)] = timeOf(*r.CreatedAt)
		}
	}
	return out, nil
}
