package bunstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Every write transaction ends in record, which brings the summaries up to
// date with what the transaction changed, raises the store's version and
// appends the transaction's events. Every path that writes goes through
// it: Write, UpdateFeature, DeleteUser, DeleteToken, InsertEvents, Load and
// PruneEvents.
//
// # The lock order
//
// A write transaction takes its row locks in this order, so that two
// writers never wait for each other in a circle:
//
//  1. the base rows it changes: the feature, user or token it reads FOR
//     UPDATE, the rows it inserts or deletes;
//  2. the summaries' rows (summaries.Record): project_stats project by project
//     in id order, then event_counts in key order;
//  3. one row of store_versions (bumpVersion);
//  4. the one row of event_order, the event order lock (appendEvents): held
//     to the commit, by a transaction that waits for no other lock.
//
// The leaves of its events are appended after it commits, or in it by a
// bulk write on a database with a single writer (leaves.go).
// record is the one place that takes 2 to 4, in that order. PruneEvents,
// HoldProject, ReleaseProject and RecordRetention (prune.go) take the
// prune lock first, which no other writer takes. A pruning batch's
// deletes take of 2 and 3 only rows no writer takes (its own shard of
// event_counts and its own row of store_versions); its events-pruned
// event then takes 2 to 4 like any write's. Load is the
// exception: it holds the event order lock from its start, on an empty
// store no other writer may write to meanwhile.
//
// # Settled ids: commit order is id order
//
// Event ids come from an identity (PostgreSQL) or AUTO_INCREMENT (MySQL)
// column, drawn when a row is inserted, and a transaction commits later.
// Two writers could draw 5 and 6 and commit 6 first: a reader following
// the log with id > last (ExportEvents, the live stream's feed) would read
// 6, move past 5, and never see it. So every transaction that appends
// events locks the one row of event_order right before it draws its
// events' ids, and holds the lock until it commits or rolls back. Ids are
// then drawn by one transaction at a time, each after the one before has
// ended: when id n is committed, every smaller id is either committed too,
// or was rolled back and will never appear (a gap). SQLite needs no lock:
// its single writer connection runs one transaction at a time.
//
// Committed is not yet visible to every reader on MySQL. InnoDB (MariaDB
// 10.11) builds a statement's snapshot by walking its list of running
// transactions while others commit and leave it, so a snapshot can count
// writer A, met before it left, as running and miss writer B, gone before
// it was met, though B drew its ids after A's commit: the reader sees B's
// id and not A's smaller one, and moves past it. A stress test of this
// lock with a reader following the log missed ids in half its runs. So on
// MySQL an export first takes the event order lock in share mode, in a
// transaction of its own, and reads the highest id there (settled,
// export.go): while it holds the lock no writer of events is committing,
// so that snapshot misses none, and every id up to the highest one read
// there is visible to any later snapshot. The export reads no id above it;
// the next one does. On PostgreSQL a snapshot is taken atomically with
// respect to commits (under ProcArrayLock), so the lock alone suffices.
//
// Writers of events commit one at a time, so the time the lock is held is
// the ceiling of their throughput; on PostgreSQL a single INSERT takes it
// itself: a statement trigger, events_order, locks the row before the
// statement draws its first id, so it is held for two round trips, the
// INSERT and the COMMIT, and no path that writes events can forget it.
// Elsewhere, and for the paths that must hold it before they insert
// (COPY, given ids), lockEventOrder takes it.
//
// A better-scaling alternative on PostgreSQL alone would store each
// event's transaction id and have readers stop at the oldest running one
// (pg_snapshot_xmin); MySQL has no portable equivalent, and one rule on
// both databases is worth more here than the throughput of concurrent
// event writers.

// changes is what a write transaction changed, for record.
type changes struct {
	// events are appended in order; record sets their ids.
	events []flagadmin.Event
	// givenIDs: the events carry their ids (Load, a follower of another
	// log), each larger than the one before and than every id stored.
	givenIDs bool
	// bulk: many events; on PostgreSQL they are sent with COPY.
	bulk bool
	// leavesInTx: the writer appends the events' leaves in this
	// transaction (Load), which fails for an event whose leaf cannot be
	// computed, so they are not checked apart.
	leavesInTx bool
	// countedAfter: the summaries are told of the events once they are all
	// written (Load, summary.Changes.Loaded), not with each batch.
	countedAfter bool
	// textLater: the full-text index takes the events' texts after they
	// are inserted (Load builds it at its end, a follower's large batch
	// leaves them to its backlog), not the writer (indexTexts).
	textLater bool
	// textBacklog: the events' texts are left to the full-text backlog
	// (deferText); where the backlog marks such events
	// (indexbuild.Backlog.Mark), they are sent marked, with COPY.
	textBacklog bool
	// tokensLater: the events' tokens are added to the vocabulary of the
	// texts after they are inserted, by the backlog's fill or by the
	// load's index build (indexbuild.Step.Tokens), not by the insert.
	tokensLater bool
	// orderLater: the load's index build records which events are out of
	// creation order (indexbuild.Backlog.Order), not the writer.
	orderLater bool

	// pruned are the events retention removed (prune.go): the summaries
	// drop them.
	pruned []flagadmin.Event

	// What the summaries derive from the base tables.
	newProjects     []string            // projects created
	addedFeatures   []flagadmin.Feature // features created (in projects that existed before)
	updatedFeatures []featureUpdate     // features changed
	memberProjects  []string            // projects whose members may have changed
	memberGroups    []int64             // groups whose users changed
	// A follower's batch (follow.go) carries rows, not their changes:
	refigured   []string // projects whose figures are computed again
	refigureAll bool     // every project's figures are
}

// featureUpdate is a feature before and after a change.
type featureUpdate struct{ old, new flagadmin.Feature }

// record ends the write transaction t with what it changed: the summaries,
// the version, then the events (see the lock order above).
func (s *Store) record(ctx context.Context, t *txn, ch *changes) error {
	if err := s.summaries.Record(ctx, t, ch.summarised()); err != nil {
		return err
	}
	if err := s.bumpVersion(ctx, t, len(ch.pruned) > 0); err != nil {
		return err
	}
	if len(ch.events) > 0 {
		if err := saltEvents(ch.events); err != nil {
			return err
		}
		withLeaves, err := s.checkWhileAppending(ctx, t, ch)
		if err != nil {
			return err
		}
		// Ids drawn, event order lock held: every event of ch has its id,
		// and no other transaction can draw one until this one ends.
		// The leaves of the verifiable log are appended once the
		// transaction commits (leaves.go), unless they were in it.
		t.wroteEvents = !withLeaves
	}
	return nil
}

// checkWhileAppending inserts ch's events (appendEvents) and checks that
// each one's leaf can be computed (checkLeaves), unless the transaction
// appends their leaves itself. A batch of parallelLeaves events or more is
// checked on a copy while it is inserted, the check's error (the caller's
// mistake) winning over the insert's; the transaction is rolled back on
// either. A bulk write on a database with a single writer whose log has a
// leaf for every event stored appends its events' leaves too
// (appendWithLeaves), and checkWhileAppending reports so.
func (s *Store) checkWhileAppending(ctx context.Context, t *txn, ch *changes) (bool, error) {
	if !keepLeaves || ch.leavesInTx {
		return false, s.appendEvents(ctx, t, ch)
	}
	if ch.bulk && s.sqlDialect.SingleWriter() {
		size, upToDate, err := s.leavesUpToDate(ctx, t)
		if err != nil {
			return false, err
		}
		if upToDate {
			return true, s.appendWithLeaves(ctx, t, ch, size)
		}
	}
	if len(ch.events) < parallelLeaves {
		if err := checkLeaves(ch.events); err != nil {
			return false, err
		}
		return false, s.appendEvents(ctx, t, ch)
	}
	checked := make(chan error, 1)
	events := slices.Clone(ch.events) // appendEvents sets the ids of ch.events
	go func() { checked <- checkLeaves(events) }()
	err := s.appendEvents(ctx, t, ch)
	if cerr := <-checked; cerr != nil {
		return false, cerr
	}
	return false, err
}

// saltEvents gives each event without a salt a new one
// (leaf.NewSalt), stored with it: its leaf commits to it
// (leaf.LeafHash). A given salt of another size than
// leaf.SaltSize is an error of kind ErrValidation.
func saltEvents(events []flagadmin.Event) error {
	for i := range events {
		switch {
		case events[i].Salt == nil:
			events[i].Salt = leaf.NewSalt()
		case len(events[i].Salt) != leaf.SaltSize:
			return &callbackError{fmt.Errorf("event %d: %w", i, &flagadmin.ValidationError{Fields: []flagadmin.FieldError{{Path: "salt",
				Message: fmt.Sprintf("must be %d bytes, got %d", leaf.SaltSize, len(events[i].Salt))}}})}
		}
	}
	return nil
}

// appendEvents takes the event order lock and inserts ch's events, setting
// their ids: drawn by the database, or given (ch.givenIDs); it indexes
// their texts where the database leaves that to the writer (indexTexts);
// where the dialect keeps a vocabulary of the search texts' tokens, it
// adds theirs, unless they are added after (ch.tokensLater: by the
// full-text backlog or the load's index build, with the texts,
// fillTokens).
func (s *Store) appendEvents(ctx context.Context, t *txn, ch *changes) error {
	keeper, keeps := s.sqlDialect.(tokenKeeper)
	var tokens stored.TokenSet // none to add: nil
	if keeps && !ch.tokensLater {
		tokens = stored.TokenSet{}
	}
	newest, err := s.newestBefore(ctx, t, ch)
	if err != nil {
		return err
	}
	if err := s.insertEvents(ctx, t, ch, tokens); err != nil {
		return err
	}
	// Before the full-text index is written in t: each statement after
	// that makes FTS5 flush its pending terms (a savepoint), which cost
	// this statement 0.17 ms a lifecycle completion at 1,000,000 events.
	if err := s.recordOrder(ctx, t, ch, newest); err != nil {
		return err
	}
	if err := s.indexTexts(ctx, t, ch); err != nil {
		return err
	}
	if tokens == nil {
		return nil
	}
	return keeper.AddSearchTokens(ctx, t, tokens.Sorted())
}

// indexTexts indexes the texts of ch's events, just inserted in t, where
// the database leaves that to the writer (indexbuild.Backlog.Index),
// unless the full-text index takes them later (ch.textLater). Their ids
// are above every other stored id (drawn, or given: checkGivenIDs), so
// the range from the smallest to the largest holds theirs alone.
func (s *Store) indexTexts(ctx context.Context, t *txn, ch *changes) error {
	if ch.textLater || s.text == nil || s.text.statements.Index == "" || len(ch.events) == 0 {
		return nil
	}
	first, last := idRange(ch.events)
	if _, err := t.ExecContext(ctx, s.text.statements.Index, first-1, last); err != nil {
		return err
	}
	s.text.indexed()
	return nil
}

// idRange returns the smallest and the largest id of events (one or
// more).
func idRange(events []flagadmin.Event) (first, last int64) {
	first, last = events[0].ID, events[0].ID
	for _, e := range events[1:] {
		first, last = min(first, e.ID), max(last, e.ID)
	}
	return first, last
}

// recordOrder records which of ch's events, just inserted in t above
// every other stored id (indexTexts), are out of creation order, where
// the full-text index reads pages in id order (indexbuild.Backlog.Order),
// unless the load's index build does (ch.orderLater).
func (s *Store) recordOrder(ctx context.Context, t *txn, ch *changes, newest sql.NullInt64) error {
	if !s.recordsOrder(ch) || inCreationOrder(ch.events, newest) {
		return nil
	}
	first, _ := idRange(ch.events)
	_, err := t.ExecContext(ctx, s.text.statements.Order, first-1, first-1, first-1)
	return err
}

// recordsOrder reports whether the writer records which of ch's events
// are out of creation order (recordOrder).
func (s *Store) recordsOrder(ch *changes) bool {
	return !ch.orderLater && s.text != nil && s.text.statements.Order != "" && len(ch.events) > 0
}

// newestBefore reads the creation time of the newest stored event in t,
// before ch's events are inserted, where the writer records which of
// them are out of creation order (none when no event is stored): a
// maximum of events_created, one entry.
func (s *Store) newestBefore(ctx context.Context, t *txn, ch *changes) (sql.NullInt64, error) {
	var newest sql.NullInt64
	if !s.recordsOrder(ch) {
		return newest, nil
	}
	err := t.QueryRowContext(ctx, "SELECT max(created_at) FROM events").Scan(&newest)
	return newest, err
}

// inCreationOrder reports whether events, in id order, are each no older
// than every event before them, newest the newest stored before them:
// then none is out of creation order, and the writer's statement that
// finds those (recordOrder) is not run.
func inCreationOrder(events []flagadmin.Event, newest sql.NullInt64) bool {
	prev := newest.Int64
	for i, e := range events {
		m := stored.Millis(e.CreatedAt)
		if (i > 0 || newest.Valid) && m < prev {
			return false
		}
		prev = m
	}
	return true
}

// insertEvents inserts ch's events (appendEvents), adding the tokens of
// each to tokens (none when nil).
func (s *Store) insertEvents(ctx context.Context, t *txn, ch *changes, tokens stored.TokenSet) error {
	mark := "" // the column that marks the events left to the backlog
	if ch.textBacklog && s.text != nil {
		mark = s.text.statements.Mark
	}
	if s.sqlDialect.CopiesEvents() && (ch.bulk || mark != "") {
		return s.copyEvents(ctx, t, ch.events, ch.givenIDs, tokens, mark)
	}
	rows := make([]stored.Event, len(ch.events))
	for i, e := range ch.events {
		r, err := stored.EventOf(e)
		if err != nil {
			return err
		}
		if !ch.givenIDs {
			r.ID = 0
		}
		rows[i] = r
		tokens.AddEvent(r)
	}
	if ch.givenIDs {
		if err := s.checkGivenIDs(ctx, t, ch.events); err != nil {
			return err
		}
		return s.insertRows(ctx, t, rows)
	}
	if ins, ok := s.sqlDialect.(eventInserter); ok {
		if err := s.lockEventOrder(ctx, t); err != nil {
			return err
		}
		return ins.InsertEvents(ctx, t, rows, ch.events)
	}
	// INSERT ... RETURNING: the INSERT takes the event order lock (the
	// events_order trigger).
	return s.insertReturning(ctx, t, rows, ch.events)
}

// insertReturning inserts rows by multi-row INSERT ... RETURNING and sets
// the ids the database draws on events. Ids are drawn in VALUES order: the
// k-th smallest is the k-th row's.
func (s *Store) insertReturning(ctx context.Context, db bun.IDB, rows []stored.Event, events []flagadmin.Event) error {
	for start, part := range stored.Chunks(rows, s.insertChunk()) {
		var ids []int64
		if err := db.NewInsert().Model(&part).Returning("id").Scan(ctx, &ids); err != nil {
			return err
		}
		if len(ids) != len(part) {
			return fmt.Errorf("inserted %d events, got %d ids", len(part), len(ids))
		}
		slices.Sort(ids)
		for i, id := range ids {
			events[start+i].ID = id
		}
	}
	return nil
}

// eventOrderSQL takes the event order lock in the caller's transaction.
const eventOrderSQL = "SELECT id FROM event_order WHERE id = 1 FOR UPDATE"

// lockEventOrder takes the event order lock in t now, unless the
// database has a single writer, which needs none.
func (s *Store) lockEventOrder(ctx context.Context, db bun.IDB) error {
	if s.sqlDialect.SingleWriter() {
		return nil
	}
	var id int
	return db.QueryRowContext(ctx, eventOrderSQL).Scan(&id)
}

// insertChunk bounds the rows of one multi-row INSERT of events (with
// stored.Chunks) or leaves.
func (s *Store) insertChunk() int { return s.sqlDialect.InsertChunk() }

// insertRows inserts rows with the ids they carry: by the prepared INSERT
// where there is one (preparedInserts), the rest by multi-row INSERTs.
func (s *Store) insertRows(ctx context.Context, db bun.IDB, rows []stored.Event) error {
	done, err := s.inserts.insert(ctx, db, func(st *insertStatements) *sql.Stmt { return st.events }, len(rows),
		func(args []any, i int) []any { return append(args, rows[i].Values()...) })
	if err != nil {
		return err
	}
	if done == len(rows) {
		return s.continueIDs(ctx, db, rows[len(rows)-1].ID)
	}
	rows = rows[done:]
	for _, part := range stored.Chunks(rows, s.insertChunk()) {
		if _, err := db.NewInsert().Model(&part).Returning("").Exec(ctx); err != nil {
			return err
		}
	}
	return s.continueIDs(ctx, db, rows[len(rows)-1].ID)
}

// checkGivenIDs takes the event order lock and checks that the ids events
// carry ascend from above every id stored: a reader following the log
// would miss a smaller one.
func (s *Store) checkGivenIDs(ctx context.Context, db bun.IDB, events []flagadmin.Event) error {
	if err := s.lockEventOrder(ctx, db); err != nil {
		return err
	}
	// Above every id stored, and the last leaf's, whose event may have
	// been pruned: the leaves are appended past it.
	var last, lastLeaf int64
	if err := db.NewRaw(lastEventIDSQL).Scan(ctx, &last); err != nil {
		return err
	}
	if err := db.NewRaw(s.readLatest(lastLeafEventSQL)).Scan(ctx, &lastLeaf); err != nil {
		return err
	}
	last = max(last, lastLeaf)
	for _, e := range events {
		if e.ID <= last {
			return &callbackError{fmt.Errorf("%w: event id %d is not above the one before (%d)", flagadmin.ErrConflict, e.ID, last)}
		}
		last = e.ID
	}
	return nil
}

// continueIDs makes the ids the database draws continue above last, an id
// just inserted as given, where its counter does not move by itself
// (sqlDialect.RaiseIDs). The event order lock keeps every other drawer out
// meanwhile.
func (s *Store) continueIDs(ctx context.Context, db bun.IDB, last int64) error {
	return s.sqlDialect.RaiseIDs(ctx, db, "events", last)
}

// copyEvents sends events with COPY (sqlDialect.CopyFrom), far less
// parsing than INSERT, on t's connection, inside t: with the
// ids they carry (given), or with ids drawn first under the event order
// lock. Rows are built as COPY consumes them, never all in memory at once
// (built first, a catch-up's batches took as long in all: on two busy
// cores the work does not overlap the server's), and their tokens added
// to tokens (none when nil); where
// mark is not empty, each is sent with that column true (left to the
// full-text backlog, indexbuild.Backlog.Mark).
func (s *Store) copyEvents(ctx context.Context, t *txn, events []flagadmin.Event, given bool, tokens stored.TokenSet, mark string) error {
	if given {
		if err := s.checkGivenIDs(ctx, t, events); err != nil {
			return err
		}
	} else if err := s.drawIDs(ctx, t, events); err != nil {
		return err
	}
	next := 0
	columns := stored.RowColumns
	if mark != "" {
		columns = append(slices.Clip(columns), mark)
	}
	err := s.sqlDialect.CopyFrom(ctx, t.conn, "events", columns, func() ([]any, error) {
		if next == len(events) {
			return nil, nil
		}
		r, err := stored.EventOf(events[next])
		next++
		if err != nil {
			return nil, err
		}
		tokens.AddEvent(r)
		if mark != "" {
			return append(r.Values(), true), nil
		}
		return r.Values(), nil
	})
	if err != nil || !given {
		return err
	}
	return s.continueIDs(ctx, t, events[len(events)-1].ID)
}

// drawIDs takes the event order lock and draws an id for each event from
// the identity of events (PostgreSQL).
func (s *Store) drawIDs(ctx context.Context, db bun.IDB, events []flagadmin.Event) error {
	if err := s.lockEventOrder(ctx, db); err != nil {
		return err
	}
	var ids []int64
	err := db.NewRaw("SELECT nextval(pg_get_serial_sequence('events', 'id')) FROM generate_series(1, ?)", len(events)).Scan(ctx, &ids)
	if err != nil {
		return err
	}
	slices.Sort(ids)
	for i := range events {
		events[i].ID = ids[i]
	}
	return nil
}
