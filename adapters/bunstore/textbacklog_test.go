package bunstore_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/textindex"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/faultsql"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// TestTextBacklog loads events into SQLite with the full-text index left
// to be filled after the load, and checks every free-text query of
// textQueries against the plain store (which scans the texts) on the same
// database: after the load, part-way through the backlog, after events
// are written, changed and deleted in and out of the pending range, and
// once the backlog is done. Then the index holds the texts of each event
// exactly once: a query of the index alone finds what a scan finds, and
// the index has and counts one row per event (a contentless FTS5 table
// told to forget a row it never held, or given one twice, miscounts).
func TestTextBacklog(t *testing.T) {
	bunstore.SetTextLaterFrom(t, 1)
	bunstore.SetTextBacklogBatch(t, 7)
	ctx := context.Background()
	s, plain := backlogStores(t)
	db := bunstore.DB(s)
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	loaded := numbered(textEvents(at))
	must(t, "Load", s.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error { return emit(loaded) }))

	pending := func() (from, to int64) { t.Helper(); return pendingRange(t, s) }
	compare := func(stage string) { t.Helper(); compareText(t, s, plain, stage) }

	if from, to := pending(); from != 0 || to != int64(len(loaded)) {
		t.Fatalf("after the load: pending (%d, %d], want (0, %d]", from, to, len(loaded))
	}
	compare("after the load")

	for range 2 {
		more, err := bunstore.FillTextBatch(ctx, s)
		if err != nil || !more {
			t.Fatalf("a batch of the backlog: more %v, %v; want more left", more, err)
		}
	}
	if from, _ := pending(); from != 14 {
		t.Fatalf("after two batches of 7: pending from %d, want 14", from)
	}
	compare("part-way")

	// Changed and deleted: one event indexed (3, 5), one pending (20, 25);
	// written: new events, above the pending range.
	for _, stmt := range []string{
		"UPDATE events SET search_payload = search_payload || ' zz-changed' WHERE id IN (3, 20)",
		"DELETE FROM events WHERE id IN (5, 25)",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: textEvents(at.Add(24 * time.Hour))}))
	compare("with writes")

	fillBacklog(t, s)
	if from, to := pending(); from != 0 || to != 0 {
		t.Fatalf("after the backlog: pending (%d, %d], want none", from, to)
	}
	compare("after the backlog")
	if _, err := db.ExecContext(ctx, "UPDATE events SET search_payload = search_payload || ' zz-changed' WHERE id = 30"); err != nil {
		t.Fatal(err)
	}
	compare("changed after the backlog")

	indexHoldsEachText(t, s)
}

// TestTextBacklogFilledByTheStore: a store fills the backlog a load left,
// by itself, after the load and at its start (a backlog left by a store
// that stopped part-way, or by an import that ended), and logs when it
// starts and when it is done; on PostgreSQL, after a follower's batch,
// it clears every mark and adds the batch's tokens to the vocabulary.
func TestTextBacklogFilledByTheStore(t *testing.T) {
	bunstore.SetTextLaterFrom(t, 1)
	bunstore.SetTextBacklogBatch(t, 5)
	ctx := context.Background()
	events := numbered(textEvents(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)))
	load := func(s *bunstore.Store) {
		t.Helper()
		must(t, "Load", s.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error { return emit(events) }))
	}
	filled := func(s *bunstore.Store, log *syncbuffer.Buffer) {
		t.Helper()
		waitUntil(t, log, "the backlog is filled", func() bool { from, to := pendingRange(t, s); return from == to })
		counted, err := bunstore.TextIndexRows(ctx, s)
		if err != nil || counted != int64(len(events)) {
			t.Errorf("the index counts %d rows (%v), want %d", counted, err, len(events))
		}
		// The line is written after the batch that ends the backlog commits.
		waitUntil(t, log, "the log says the backlog is done", func() bool { return strings.Contains(log.String(), backlogDone) })
		if !strings.Contains(log.String(), "filling the full-text index with the texts of loaded events") {
			t.Errorf("the log does not say the backlog started:\n%s", log)
		}
	}
	// started returns a store that has looked for a backlog at its start
	// (and found none): only a write can set it to work.
	started := func(t *testing.T, log *syncbuffer.Buffer) *bunstore.Store {
		looked := make(chan struct{})
		var once sync.Once
		faults := faultsql.New()
		faults.Add(faultsql.Rule{Match: `^SELECT from_id, to_id FROM events_text_pending`, After: func(context.Context, string) error {
			once.Do(func() { close(looked) })
			return nil
		}})
		s := open(t, dbtest.SQLite(t), bunstore.WithLogger(slog.New(slog.NewTextHandler(log, nil))),
			bunstore.WithConnector(func(c driver.Connector) driver.Connector { return faults.Wrap(c) }))
		select {
		case <-looked:
		case <-time.After(30 * time.Second):
			t.Fatal("the store did not look for a backlog at its start")
		}
		return s
	}
	t.Run("after the load", func(t *testing.T) {
		var log syncbuffer.Buffer
		s := started(t, &log)
		load(s)
		filled(s, &log)
	})
	t.Run("after a follower's batch", func(t *testing.T) {
		bunstore.SetTextLaterBatch(t, 3)
		bunstore.SetTextBacklogQuiet(t, 10*time.Millisecond)
		var log syncbuffer.Buffer
		s := started(t, &log)
		startFollowing(t, s, nil)
		last := events[len(events)-1].ID
		must(t, "ApplyFollow", s.ApplyFollow(ctx, "a", followT0, &follow.Batch{Events: slices.Clone(events), Position: last}))
		filled(s, &log)
	})
	t.Run("after a follower's batch, on PostgreSQL", func(t *testing.T) {
		bunstore.SetTextLaterBatch(t, 3)
		bunstore.SetTextBacklogQuiet(t, 10*time.Millisecond)
		var log syncbuffer.Buffer
		s := open(t, dbtest.Postgres(t), bunstore.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		startFollowing(t, s, nil)
		last := events[len(events)-1].ID
		must(t, "ApplyFollow", s.ApplyFollow(ctx, "a", followT0, &follow.Batch{Events: slices.Clone(events), Position: last}))
		waitUntil(t, &log, "the log says the backlog is done", func() bool { return strings.Contains(log.String(), backlogDone) })
		if from, to := pendingRange(t, s); from != to {
			t.Errorf("after the backlog: pending (%d, %d], want none", from, to)
		}
		tokenIndexHoldsEachText(t, s)
	})
	t.Run("at the start", func(t *testing.T) {
		url := dbtest.SQLite(t)
		held, err := bunstore.Open(ctx, url, bunstore.WithTextBacklogHeld())
		must(t, "Open", err)
		load(held)
		if more, err := bunstore.FillTextBatch(ctx, held); err != nil || !more {
			t.Fatalf("a batch of the backlog: more %v, %v; want more left", more, err)
		}
		must(t, "Close", held.Close())
		var log syncbuffer.Buffer
		filled(open(t, url, bunstore.WithLogger(slog.New(slog.NewTextHandler(&log, nil)))), &log)
	})
}

// TestTextBacklogBatchAllOrNothing: a batch of the backlog that fails
// leaves neither its texts in the index nor the pending range moved, and
// the store tries again after a while.
func TestTextBacklogBatchAllOrNothing(t *testing.T) {
	bunstore.SetTextLaterFrom(t, 1)
	bunstore.SetTextBacklogBatch(t, 5)
	bunstore.SetTextBacklogRetry(t, 10*time.Millisecond)
	ctx := context.Background()
	events := numbered(textEvents(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)))
	broken := errors.New("disk I/O error")
	t.Run("a failed batch", func(t *testing.T) {
		s, faults := openWithFaults(t, dbtest.SQLite(t), bunstore.WithTextBacklogHeld())
		must(t, "Load", s.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error { return emit(events) }))
		remove := faults.Add(faultsql.Rule{Match: `^UPDATE events_text_pending `, Err: broken})
		if _, err := bunstore.FillTextBatch(ctx, s); !errors.Is(err, broken) {
			t.Fatalf("the batch: got %v, want the fault", err)
		}
		remove()
		var from int64
		must(t, "read the pending range", bunstore.DB(s).QueryRowContext(ctx, "SELECT from_id FROM events_text_pending").Scan(&from))
		rows, err := bunstore.TextIndexRows(ctx, s)
		if err != nil || from != 0 || rows != 0 {
			t.Errorf("after the failed batch: pending from %d, the index counts %d rows (%v); want 0 and 0", from, rows, err)
		}
	})
	t.Run("tried again", func(t *testing.T) {
		var log syncbuffer.Buffer
		s, faults := openWithFaults(t, dbtest.SQLite(t), bunstore.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		failures := 0
		faults.Add(faultsql.Rule{Match: `^UPDATE events_text_pending `, Before: func(context.Context, string) error {
			if failures < 2 {
				failures++
				return broken
			}
			return nil
		}})
		must(t, "Load", s.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error { return emit(events) }))
		waitUntil(t, &log, "the log says the backlog is done", func() bool { return strings.Contains(log.String(), backlogDone) })
		if n := strings.Count(log.String(), "could not fill the full-text index"); n != 2 {
			t.Errorf("%d failures logged, want 2:\n%s", n, log.String())
		}
		rows, err := bunstore.TextIndexRows(ctx, s)
		if err != nil || rows != int64(len(events)) {
			t.Errorf("the index counts %d rows (%v), want %d", rows, err, len(events))
		}
	})
}

// TestTextBacklogFollow: a follower's batch of many events leaves their
// texts to the backlog (the pending range made, then extended) while the
// store's events are all in the range or below it; a small batch is
// indexed as it is written, and a large one after it, no longer next to
// the range, too. On PostgreSQL the events left to it are marked, so
// that its token indexes leave them out. Every free-text query answers as
// the plain store's at each step and part-way through the backlog, and
// once the backlog is filled the index holds each event's texts once.
func TestTextBacklogFollow(t *testing.T) {
	bunstore.SetTextLaterBatch(t, 3)
	bunstore.SetTextBacklogBatch(t, 4)
	for _, db := range []struct {
		name   string
		url    func(testing.TB) string
		marks  bool                              // the events left to the backlog are marked
		filled func(*testing.T, *bunstore.Store) // checks the index once the backlog is filled
	}{
		{"sqlite", dbtest.SQLite, false, indexHoldsEachText},
		{"postgres", dbtest.Postgres, true, tokenIndexHoldsEachText},
	} {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			s, plain := backlogStoresOn(t, db.url(t))
			at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
			events := numbered(append(textEvents(at), textEvents(at.Add(24*time.Hour))...))
			startFollowing(t, s, events[:10])
			position := int64(10)
			for _, step := range []struct {
				name     string
				upTo     int64 // the batch: the events after the position up to this id
				from, to int64 // the pending range after it
			}{
				{"a large batch", 20, 10, 20},
				{"the next", 25, 10, 25},
				{"a small batch", 27, 10, 25},
				{"a large batch after it", 40, 10, 25},
			} {
				b := &follow.Batch{Events: slices.Clone(events[position:step.upTo]), Position: step.upTo}
				must(t, step.name, s.ApplyFollow(ctx, "a", followT0, b))
				position = step.upTo
				from, to := pendingRange(t, s)
				if from != step.from || to != step.to {
					t.Errorf("%s: pending (%d, %d], want (%d, %d]", step.name, from, to, step.from, step.to)
				}
				if db.marks {
					if marked := markedEvents(t, s); !slices.Equal(marked, idsIn(from, to)) {
						t.Errorf("%s: the events marked as left to the backlog are %v, want those of the pending range", step.name, marked)
					}
				}
				compareText(t, s, plain, step.name)
			}
			more, err := bunstore.FillTextBatch(ctx, s)
			if err != nil || !more {
				t.Fatalf("a batch of the backlog: more %v, %v; want more left", more, err)
			}
			if from, _ := pendingRange(t, s); from != 14 {
				t.Errorf("after a batch of 4: pending from %d, want 14", from)
			}
			if db.marks {
				if marked := markedEvents(t, s); !slices.Equal(marked, idsIn(14, 25)) {
					t.Errorf("after a batch of 4: the events marked are %v, want 15 to 25", marked)
				}
			}
			compareText(t, s, plain, "part-way through the backlog")
			fillBacklog(t, s)
			compareText(t, s, plain, "after the backlog")
			db.filled(t, s)
		})
	}
}

// markedEvents returns the ids of the events of s (PostgreSQL) marked as
// left to the full-text backlog, in order.
func markedEvents(t *testing.T, s *bunstore.Store) []int64 {
	t.Helper()
	var ids []int64
	must(t, "the marked events", bunstore.DB(s).NewRaw("SELECT id FROM events WHERE "+stored.LaterTextColumn+" ORDER BY id").Scan(context.Background(), &ids))
	return ids
}

// idsIn returns the ids above from up to to, in order (nil when none).
func idsIn(from, to int64) []int64 {
	var ids []int64
	for id := from + 1; id <= to; id++ {
		ids = append(ids, id)
	}
	return ids
}

// tokenIndexHoldsEachText checks that PostgreSQL's token index of s, with
// nothing pending, holds the texts of each event: no event is marked as
// left to the backlog, the vocabulary holds every token of every text,
// and the index's condition finds what a scan finds for every query.
func tokenIndexHoldsEachText(t *testing.T, s *bunstore.Store) {
	t.Helper()
	if marked := markedEvents(t, s); len(marked) > 0 {
		t.Errorf("events still marked as left to the backlog: %v", marked)
	}
	vocabularyHoldsEachToken(t, s)
	indexFindsWhatAScanFinds(t, s, textindex.Tokens, "strpos")
}

// fillBacklog fills s's full-text backlog batch by batch, then merges
// the index and ends the pending range.
func fillBacklog(t *testing.T, s *bunstore.Store) {
	t.Helper()
	for more := true; more; {
		var err error
		more, err = bunstore.FillTextBatch(context.Background(), s)
		must(t, "a batch of the backlog", err)
	}
}

// backlogQueries are the free-text queries of the backlog's tests.
var backlogQueries = append(slices.Clone(textQueries), "zz-changed")

// compareText checks every query of backlogQueries on s against plain,
// the plain store on the same database, which scans the texts.
func compareText(t *testing.T, s, plain *bunstore.Store, stage string) {
	t.Helper()
	ctx := context.Background()
	for _, text := range backlogQueries {
		for _, q := range []flagadmin.EventQuery{
			{Text: text, Limit: 50},
			{Text: text, Limit: 50, TextScope: flagadmin.TextPayloadTypeCreator},
			{Text: text, Limit: 2, Offset: 1, TextScope: flagadmin.TextPayloadTypeCreator},
		} {
			want, err := plain.SearchEvents(ctx, q)
			must(t, "plain store", err)
			got, err := s.SearchEvents(ctx, q)
			must(t, "store", err)
			if g, w := bunstore.PageKey(t, got), bunstore.PageKey(t, want); g != w {
				t.Errorf("%s: query %+q scope %d offset %d:\ngot  %s\nwant %s", stage, q.Text, q.TextScope, q.Offset, g, w)
			}
		}
	}
}

// indexHoldsEachText checks that the full-text index of s, with nothing
// pending, holds the texts of each event once: its vocabulary holds every
// token of every text, a query of the index alone finds what a scan finds,
// and the index has and counts one row per event (a contentless FTS5
// table told to forget a row it never held, or given one twice,
// miscounts).
func indexHoldsEachText(t *testing.T, s *bunstore.Store) {
	t.Helper()
	ctx := context.Background()
	db := bunstore.DB(s)
	var events, indexed int
	must(t, "count", db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM events), (SELECT COUNT(*) FROM events_tokens_docsize)").Scan(&events, &indexed))
	counted, err := bunstore.TextIndexRows(ctx, s)
	must(t, "the index's count of rows", err)
	if indexed != events || counted != int64(events) {
		t.Errorf("the index has %d rows and counts %d for %d events", indexed, counted, events)
	}
	vocabularyHoldsEachToken(t, s)
	indexFindsWhatAScanFinds(t, s, textindex.Match, "instr")
}

// indexFindsWhatAScanFinds checks, for every query of backlogQueries that
// the index answers, that the condition cond writes finds on s the events
// a scan of the texts by the function contains (instr or strpos) finds.
func indexFindsWhatAScanFinds(t *testing.T, s *bunstore.Store, cond func(string, flagadmin.TextScope) (sqlq.Fragment, bool), contains string) {
	t.Helper()
	ctx := context.Background()
	db := bunstore.DB(s)
	for _, text := range backlogQueries {
		c, ok := cond(text, flagadmin.TextPayloadTypeCreator)
		if !ok {
			continue // not read from the index
		}
		var fromIndex, scanned []int64
		must(t, "match", db.NewRaw("SELECT id FROM events WHERE "+c.Text+" ORDER BY id", c.Args...).Scan(ctx, &fromIndex))
		must(t, "scan", db.NewRaw("SELECT id FROM events WHERE "+contains+"(search_payload, ?) > 0 OR "+contains+"(search_meta, ?) > 0 ORDER BY id", text, text).Scan(ctx, &scanned))
		if !slices.Equal(fromIndex, scanned) {
			t.Errorf("query %+q: the index finds %v, a scan %v", text, fromIndex, scanned)
		}
	}
}

// vocabularyHoldsEachToken checks that the vocabulary of the texts of s
// holds every token of every event's texts (the long ones aside on
// PostgreSQL, which leaves them out).
func vocabularyHoldsEachToken(t *testing.T, s *bunstore.Store) {
	t.Helper()
	ctx := context.Background()
	db := bunstore.DB(s)
	var texts, vocabulary []string
	must(t, "texts", db.NewRaw("SELECT search_payload FROM events UNION ALL SELECT search_meta FROM events").Scan(ctx, &texts))
	must(t, "vocabulary", db.NewRaw("SELECT token FROM search_tokens").Scan(ctx, &vocabulary))
	tokens := stored.TokenSet{}
	for _, text := range texts {
		tokens.Add(text)
	}
	for _, token := range vocabulary {
		delete(tokens, token)
	}
	if db.Dialect().Name() == dialect.PG {
		maps.DeleteFunc(tokens, func(token string, _ struct{}) bool { return stored.LongSearchToken(token) })
	}
	if len(tokens) > 0 {
		t.Errorf("the vocabulary lacks %d tokens of the texts: %.200q", len(tokens), tokens.Sorted())
	}
}

// backlogStores opens a store on a new SQLite database and the plain
// store on the same database, neither filling the full-text backlog by
// itself.
func backlogStores(t *testing.T) (s, plain *bunstore.Store) {
	t.Helper()
	return backlogStoresOn(t, dbtest.SQLite(t))
}

// backlogStoresOn is backlogStores on the database of url.
func backlogStoresOn(t *testing.T, url string) (s, plain *bunstore.Store) {
	t.Helper()
	return open(t, url, bunstore.WithTextBacklogHeld()),
		open(t, url, bunstore.WithTextBacklogHeld(), bunstore.WithoutTuning(bunstore.TextIndex))
}

// numbered gives events the ids 1, 2, ... in order, for a load or a
// follower's batches, and returns them.
func numbered(events []flagadmin.Event) []flagadmin.Event {
	for i := range events {
		events[i].ID = int64(i + 1)
	}
	return events
}

// pendingRange returns the range of event ids pending in the full-text
// backlog of s, (from, to]; 0 and 0 when none is.
func pendingRange(t *testing.T, s *bunstore.Store) (from, to int64) {
	t.Helper()
	rows, err := bunstore.DB(s).QueryContext(context.Background(), "SELECT from_id, to_id FROM events_text_pending")
	must(t, "read the pending range", err)
	defer rows.Close()
	if rows.Next() {
		must(t, "scan the pending range", rows.Scan(&from, &to))
	}
	return from, to
}

// followT0 is when the backlog tests' follower holds the lease.
var followT0 = time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)

// startFollowing makes s follow a source from loaded, its first copy, at
// the position of its last event, holder "a" holding the lease at
// followT0.
func startFollowing(t *testing.T, s *bunstore.Store, loaded []flagadmin.Event) {
	t.Helper()
	ctx := context.Background()
	if _, ok, err := s.AcquireFollowLease(ctx, "a", followT0, followT0.Add(time.Hour)); err != nil || !ok {
		t.Fatalf("AcquireFollowLease: %v %v", ok, err)
	}
	var position int64
	if len(loaded) > 0 {
		position = loaded[len(loaded)-1].ID
	}
	source := follow.Source{SystemID: "1", Database: "unleash", URL: "postgres://db.example:5432/unleash"}
	must(t, "LoadFollow", s.LoadFollow(ctx, "a", followT0, follow.State{Source: source, Position: position}, &flagadmin.Batch{},
		func(emit func([]flagadmin.Event) error) error { return emit(slices.Clone(loaded)) }))
}

// backlogDone is what the store logs once the backlog is filled.
const backlogDone = "the full-text index holds the texts of every event"

// waitUntil waits up to 30 s for cond, which what describes, and fails
// the test with the store's log if it does not come.
func waitUntil(t *testing.T, log *syncbuffer.Buffer, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not after 30 s: %s; the log:\n%s", what, log.String())
		}
	}
}
