package bunstore

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// The newest event of each project (the project list's lastUpdatedAt),
// kept at write time in project_last_events: rows (project, shard) →
// last_event_at, each the newest createdAt among the events of that project
// written to that row. A project's newest event is the largest
// last_event_at of its rows, taken on read (lastEventsJoin).
//
// Every path that appends events raises, in the same transaction, one row
// of each project of its events. With a single row per project, concurrent
// writers of one project (lifecycle completions: their events are always
// the newest) would queue on its lock until they commit. So a project has
// up to lastEventShards rows, added only when writers meet:
//
//   - events of one project (the writes of the Service), on PostgreSQL:
//     the transaction raises the project's first row that no other
//     transaction holds (FOR UPDATE SKIP LOCKED), or when all are held, or
//     there is none yet, a row drawn at random (created if missing). A
//     project has about as many rows as it had concurrent writers, and
//     the project list reads few. MySQL draws the row at random, as
//     event_counts does; SQLite's writers take turns and use row 0.
//   - events of several projects (Write batches, the bulk path): row 0 of
//     each project, in project order.
//
// No deadlocks: a transaction waits for at most one row of this table, or
// holds only earlier rows (in project order) of it while waiting; and
// every writer locks project_stats, then project_last_events, then
// event_counts.
//
// Exact under concurrency: each row holds the createdAt of a committed
// event of its project (it is raised in the transaction that stores the
// event) and is only ever raised, and each event's createdAt is at most
// the value of one of its project's rows once the event is committed. So
// a snapshot's largest value is its newest event. Rows are keyed by the
// events' project value, not by the projects table: events stored before
// their project exists count once it does.

// lastEventShards bounds the rows of one project: as many as the
// concurrent writers of one project that do not wait for each other (the
// load tool's 16 connections, completing the features of one project after
// another, meet on one project).
const lastEventShards = 16

// lastEventsSchema is the table of newest events, by project and shard.
var lastEventsSchema = []table{{name: "project_last_events", body: `
		project {EVENTKEY} NOT NULL,
		shard SMALLINT NOT NULL,
		last_event_at BIGINT NOT NULL,
		PRIMARY KEY (project, shard)`}}

// lastEvent is what a transaction writes to the row of one project.
type lastEvent struct {
	project string
	at      int64 // createdAt, Unix milliseconds
}

// lastEvents returns the newest event time of each project of events, in
// project order.
func lastEvents(events []flagadmin.Event) []lastEvent {
	newest := map[string]int64{}
	for _, e := range events {
		if e.Project == nil {
			continue
		}
		ms := millis(e.CreatedAt)
		if at, ok := newest[*e.Project]; !ok || at < ms {
			newest[*e.Project] = ms
		}
	}
	out := make([]lastEvent, 0, len(newest))
	for p, at := range newest {
		out = append(out, lastEvent{p, at})
	}
	slices.SortFunc(out, func(a, b lastEvent) int { return cmp.Compare(a.project, b.project) })
	return out
}

// lastEventsUpsert raises rows of project_last_events. A row is only
// rewritten when the new time is newer (MySQL leaves a row whose value is
// unchanged).
var lastEventsUpsert = upsert{table: "project_last_events", columns: [3]string{"project", "shard", "last_event_at"}, merge: mergeMax, chunk: 1000}

// raiseLastEvents raises the rows of the projects of events in shard,
// through exec, in the caller's transaction.
func raiseLastEvents(ctx context.Context, name dialect.Name, dollar bool, rows []lastEvent, shard int, exec func(ctx context.Context, query string, args ...any) error) error {
	triples := make([][3]any, len(rows))
	for i, r := range rows {
		triples[i] = [3]any{r.project, shard, r.at}
	}
	return lastEventsUpsert.write(ctx, name, dollar, triples, exec)
}

// raiseFreeRowSQL raises the first row of a project that no other
// transaction holds to a time, when that is newer (the row is locked,
// so the value it compares is the newest committed one). It returns the
// number of such rows (0 or 1) and the shards the project has, as a bit
// set. Arguments: project, time, project, time, project.
const raiseFreeRowSQL = `WITH free AS (
		SELECT shard, last_event_at FROM project_last_events WHERE project = ?
		ORDER BY shard LIMIT 1 FOR UPDATE SKIP LOCKED
	), raised AS (
		UPDATE project_last_events SET last_event_at = ?
		WHERE project = ? AND shard = (SELECT shard FROM free) AND (SELECT last_event_at FROM free) < ?
	)
	SELECT (SELECT COUNT(*) FROM free), (SELECT COALESCE(SUM(1 << shard), 0) FROM project_last_events WHERE project = ?)`

// newShard draws the row for a transaction that found every row of its
// project held: one the project does not have yet (in the bit set have),
// so that it waits for nobody, while there is one.
func newShard(have int64) int {
	var missing []int
	for k := range lastEventShards {
		if have&(1<<k) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return rand.IntN(lastEventShards)
	}
	return missing[rand.IntN(len(missing))]
}

// eventStats raises the newest event of the projects of events, in a bun
// transaction (before event_counts). With spread false (benchmarks only,
// see SetLastEventShards), every writer raises row 0.
func eventStats(ctx context.Context, db bun.IDB, events []flagadmin.Event, spread bool) error {
	rows := lastEvents(events)
	if len(rows) == 0 {
		return nil
	}
	name := db.Dialect().Name()
	shard := 0
	if spread && len(rows) == 1 && name != dialect.SQLite {
		var have int64
		if name == dialect.PG {
			var found int
			r := rows[0]
			if err := db.QueryRowContext(ctx, raiseFreeRowSQL, r.project, r.at, r.project, r.at, r.project).Scan(&found, &have); err != nil || found > 0 {
				return err
			}
		}
		shard = newShard(have)
	}
	return raiseLastEvents(ctx, name, false, rows, shard, func(ctx context.Context, query string, args ...any) error {
		_, err := db.ExecContext(ctx, query, args...)
		return err
	})
}

// eventStatsPgx raises the newest event of the projects of events in a pgx
// transaction (the COPY path, row 0; before event_counts).
func eventStatsPgx(ctx context.Context, tx pgx.Tx, events []flagadmin.Event) error {
	return raiseLastEvents(ctx, dialect.PG, true, lastEvents(events), 0, func(ctx context.Context, query string, args ...any) error {
		_, err := tx.Exec(ctx, query, args...)
		return err
	})
}

// lastEventsJoin is the project list's join of each project's newest event,
// as column l.last_event_at (null without events).
const lastEventsJoin = ` LEFT JOIN (SELECT project, MAX(last_event_at) AS last_event_at
		FROM project_last_events GROUP BY project) l ON l.project = p.id`

// fillLastEvents are the statements that recompute project_last_events
// from the events, all in shard 0.
var fillLastEvents = []string{
	"DELETE FROM project_last_events",
	`INSERT INTO project_last_events (project, shard, last_event_at)
		SELECT project, 0, MAX(created_at) FROM events WHERE project IS NOT NULL GROUP BY project`,
}

// migrateLastEvents is the Up of migration project_last_events: the table,
// filled from the events already stored, replaces project_stats'
// last_event_at (migration project_stats), which is dropped. It can run
// again after a failure part-way (MySQL cannot roll DDL back).
func migrateLastEvents(ctx context.Context, db *bun.DB) error {
	if err := createSchema(ctx, db, lastEventsSchema); err != nil {
		return err
	}
	stmts := slices.Clone(fillLastEvents)
	has, err := columnExists(ctx, db, "project_stats", "last_event_at")
	if err != nil {
		return err
	}
	if has {
		stmts = append(stmts, "ALTER TABLE project_stats DROP COLUMN last_event_at")
	}
	return execAllTx(ctx, db, stmts)
}

// unmigrateLastEvents is the Down of migration project_last_events:
// project_stats.last_event_at again, set to each project's newest event,
// and project_last_events dropped. It can run again after a failure
// part-way.
func unmigrateLastEvents(ctx context.Context, db *bun.DB) error {
	table, err := columnExists(ctx, db, "project_last_events", "project")
	if err != nil || !table {
		return err // already done
	}
	has, err := columnExists(ctx, db, "project_stats", "last_event_at")
	if err != nil {
		return err
	}
	var stmts []string
	if !has {
		stmts = append(stmts, "ALTER TABLE project_stats ADD COLUMN last_event_at BIGINT NULL")
	}
	stmts = append(stmts, `UPDATE project_stats SET last_event_at =
		(SELECT MAX(l.last_event_at) FROM project_last_events l WHERE l.project = project_stats.project_id)`)
	if err := execAllTx(ctx, db, stmts); err != nil {
		return err
	}
	return dropSchema(ctx, db, lastEventsSchema)
}

// columnExists reports whether table exists and has column, in the store's
// schema.
func columnExists(ctx context.Context, db bun.IDB, table, column string) (bool, error) {
	var q string
	switch db.Dialect().Name() {
	case dialect.PG:
		q = "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?"
	case dialect.MySQL:
		q = "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?"
	default:
		q = "SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?"
	}
	var n int
	err := db.QueryRowContext(ctx, q, table, column).Scan(&n)
	return n > 0, err
}
