package bunstore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
)

// leafV1Migration is the migration to leaf format v1 (adapters/tlog/leaf):
// the columns of schema/leafv1-*.sql, a salt for every stored event, and
// the log's leaves rebuilt from the events.
const leafV1Migration = "20261202000001"

// errPrunedBeforeV1 is the refusal of migrateLeafV1: a v1 leaf commits to
// the event's content, which is gone once the event is pruned.
var errPrunedBeforeV1 = errors.New("the verifiable log cannot be rebuilt under leaf format v1")

// migrateLeafV1 is the migration leafV1Migration. A leaf of format v1
// commits to its event's content with the event's salt, so the leaves of
// the log are rebuilt: every event gets a salt (leaf.NewSalt) and
// every leaf its v1 hash and tombstone (created_at, project, type,
// content), computed from its event, at the same index; the stored
// interior hashes and the checkpoints, of the old leaves, are deleted
// (the server computes the hashes again and signs a new checkpoint).
// Every earlier checkpoint, of the old leaves, no longer verifies.
//
// A leaf whose event is gone (pruned by retention before this migration)
// cannot be rebuilt: its content is not stored anywhere. The migration
// then stops before changing anything, with an error of errPrunedBeforeV1
// naming the first such leaf.
//
// It is safe to run again after a failure: the columns are added when
// missing (on MySQL, whose DDL cannot roll back, before the rest), and the
// leaves are rebuilt in one transaction under the event order lock, so
// that no writer of an older version appends an event meanwhile. A
// database whose leaves and events are all of v1 already (a rebuild that
// committed but was not recorded) is left as it is.
func migrateLeafV1(ctx context.Context, db *bun.DB, o migrateOptions) error {
	done, err := leavesAreV1(ctx, db)
	if err != nil || done {
		return err
	}
	if err := refuseLostLeaves(ctx, db); err != nil {
		return err
	}
	stmts, err := schemaStatements(ctx, db, "leafv1-")
	if err != nil {
		return err
	}
	for _, stmt := range stmts {
		if err := addColumn(ctx, db, stmt); err != nil {
			return err
		}
	}
	return inMigrationTx(ctx, db, func(ctx context.Context, tx bun.IDB) error {
		if tx.Dialect().Name() != dialect.SQLite {
			if _, err := tx.ExecContext(ctx, eventOrderSQL); err != nil {
				return err
			}
		}
		// Again under the lock: a pruner of an older version may have
		// pruned since.
		if err := refuseLostLeaves(ctx, tx); err != nil {
			return err
		}
		return rebuildLeaves(ctx, tx, o)
	})
}

// addColumnSQL matches the statements of schema/leafv1-*.sql.
var addColumnSQL = regexp.MustCompile(`^ALTER TABLE (\w+) ADD COLUMN (\w+) `)

// addColumn runs stmt, an ALTER TABLE ... ADD COLUMN, unless the column
// exists.
func addColumn(ctx context.Context, db bun.IDB, stmt string) error {
	m := addColumnSQL.FindStringSubmatch(stmt)
	if m == nil {
		return fmt.Errorf("not a statement that adds a column: %.60q", stmt)
	}
	exists, err := columnExists(ctx, db, m[1], m[2])
	if err != nil || exists {
		return err
	}
	return execAll(ctx, db, []string{stmt})
}

// leavesAreV1 reports whether the columns of v1 exist and every leaf and
// every event has them filled.
func leavesAreV1(ctx context.Context, db bun.IDB) (bool, error) {
	for _, c := range [][2]string{{"events", "salt"}, {"log_leaves", "content"}} {
		exists, err := columnExists(ctx, db, c[0], c[1])
		if err != nil || !exists {
			return false, err
		}
	}
	var n int64
	err := db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM events WHERE salt IS NULL) + (SELECT COUNT(*) FROM log_leaves WHERE content IS NULL)").Scan(&n)
	return n == 0, err
}

// refuseLostLeaves returns an error of errPrunedBeforeV1 when a leaf has
// no event: one pruned by retention (or removed otherwise), whose v1
// leaf cannot be computed.
func refuseLostLeaves(ctx context.Context, db bun.IDB) error {
	var lost []struct {
		N       int64 `bun:"n"`
		Index   int64 `bun:"idx"`
		EventID int64 `bun:"event_id"`
	}
	err := db.NewRaw(`SELECT COUNT(*) OVER () AS n, l.idx, l.event_id FROM log_leaves l
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = l.event_id) ORDER BY l.idx LIMIT 1`).Scan(ctx, &lost)
	if err != nil || len(lost) == 0 {
		return err
	}
	l := lost[0]
	// A callbackError: the store returns it as it is (fail), one line.
	return &callbackError{fmt.Errorf("%w: %d of its leaves, the first leaf %d (event %d), are of events pruned before it, "+
		"whose content a v1 leaf commits to and this database no longer holds; nothing was changed: "+
		"keep running the previous release of flagadmin on this database", errPrunedBeforeV1, l.N, l.Index, l.EventID)}
}

// rebuildBatch is how many events the rebuild reads at a time, and how
// often it reports its progress.
const rebuildBatch = 5000

// rebuildLeaves gives every event a salt (keeping one it has) and makes
// the leaves of the events in id order from index 0, in tx, which holds
// the event order lock and whose every leaf has its event
// (refuseLostLeaves): the leaves the log held, at their indexes, with
// their v1 hashes, and those of events that had none (a database whose
// log migration made no leaves). The stored interior hashes and the
// checkpoints are deleted.
func rebuildLeaves(ctx context.Context, tx bun.IDB, o migrateOptions) error {
	for _, stmt := range []string{"DELETE FROM log_hashes", "DELETE FROM log_checkpoints", "DELETE FROM log_leaves"} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	var total int64
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM events").Scan(&total); err != nil {
		return err
	}
	columns := strings.Join(append(append([]string{}, stored.EventColumns...), "salt"), ", ")
	var size, after int64
	for {
		var rows []stored.Event
		err := tx.NewRaw("SELECT "+columns+" FROM events WHERE id > ? ORDER BY id LIMIT ?", after, rebuildBatch).Scan(ctx, &rows)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		leaves := make([]leafRow, len(rows))
		var salted []stored.Event
		for i, r := range rows {
			e, err := r.Event()
			if err != nil {
				return fmt.Errorf("event %d: %w", r.ID, err)
			}
			e.Salt = r.Salt
			if len(e.Salt) != leaf.SaltSize {
				e.Salt = leaf.NewSalt()
				salted = append(salted, stored.Event{ID: e.ID, Salt: e.Salt})
			}
			l, err := leafOf(e)
			if err != nil {
				return fmt.Errorf("event %d: %w", r.ID, err)
			}
			l.Index = size + int64(i)
			leaves[i] = l
		}
		if err := saveSalts(ctx, tx, salted); err != nil {
			return err
		}
		if err := insertLeafRows(ctx, tx, leaves); err != nil {
			return err
		}
		size += int64(len(rows))
		after = rows[len(rows)-1].ID
		o.report(leafV1Migration, fmt.Sprintf("rebuilt %d of %d leaves", size, total))
	}
	return nil
}

// saltChunk bounds the events of one statement of saveSalts.
const saltChunk = 500

// saveSalts stores the salts of events (their ids and salts set), a few
// hundred in a statement: UPDATE ... SET salt = CASE id WHEN ... END.
func saveSalts(ctx context.Context, tx bun.IDB, events []stored.Event) error {
	for start := 0; start < len(events); start += saltChunk {
		part := events[start:min(len(events), start+saltChunk)]
		var b strings.Builder
		args := make([]any, 0, 3*len(part))
		then := " WHEN ? THEN ?"
		if tx.Dialect().Name() == dialect.PG {
			then += "::bytea" // else the CASE is of type text
		}
		b.WriteString("UPDATE events SET salt = CASE id")
		for _, e := range part {
			b.WriteString(then)
			args = append(args, e.ID, e.Salt)
		}
		b.WriteString(" END WHERE id IN (?)")
		ids := make([]int64, len(part))
		for i, e := range part {
			ids[i] = e.ID
		}
		args = append(args, bun.In(ids))
		if _, err := tx.NewRaw(b.String(), args...).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}
