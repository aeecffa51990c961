package bunstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// bulkEvents returns n events with ids from first on (none when first is
// 0), spread over projects, some without a project or feature.
func bulkEvents(n int, first int64) []flagadmin.Event {
	events := make([]flagadmin.Event, n)
	for i := range events {
		name, project := fmt.Sprintf("flag-%d", i), fmt.Sprintf("p%d", i%3)
		e := flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "ada@example.com",
			CreatedAt: time.Date(2026, 1, 1, 0, 0, i, 1_500_000, time.UTC),
			Data:      json.RawMessage(fmt.Sprintf(`{"name":%q,"enabled":%t}`, name, i%2 == 0))}
		if i%5 != 0 {
			e.Project, e.FeatureName = &project, &name
		}
		if first > 0 {
			e.ID = first + int64(i)
		}
		events[i] = e
	}
	return events
}

// leafRows reads every row of log_leaves in index order.
func leafRows(t *testing.T, s *Store) []leafRow {
	t.Helper()
	var rows []leafRow
	if err := s.db.NewSelect().Model(&rows).Column(leafColumns...).OrderExpr("idx").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestBulkWriteAppendsItsLeaves: on SQLite (a single writer) a bulk write
// whose log has a leaf for every event stored appends its events' leaves
// in its own transaction, leaving nothing to the appender, with drawn ids
// (InsertEvents) and with given ids whose texts the index takes later (a
// follower's batch, inserted by the prepared INSERTs): each leaf the one
// appendIn computes from the stored row, so the rows the prepared INSERT
// wrote read back as their events. Behind an event without a leaf, the
// write leaves its leaves to the appender.
func TestBulkWriteAppendsItsLeaves(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, dbtest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.settleLeaves(ctx); err != nil {
		t.Fatal(err)
	}
	written := s.leaves.written.Load()
	if err := s.InsertEvents(ctx, bulkEvents(300, 0), 0); err != nil {
		t.Fatal(err)
	}
	given := func(events []flagadmin.Event) error {
		return s.inTx(ctx, "bulk", func(context.Context, *txn) (*changes, error) {
			return &changes{events: events, givenIDs: true, bulk: true, textLater: true}, nil
		})
	}
	if err := given(bulkEvents(301, 1001)); err != nil {
		t.Fatal(err)
	}
	if s.inserts.prepared.Load() == nil {
		t.Fatal("the inserts were not prepared")
	}
	if w := s.leaves.written.Load(); w != written {
		t.Errorf("the appender was woken %d times by bulk writes that appended their leaves", w-written)
	}
	inTx := leafRows(t, s)
	if len(inTx) != 601 {
		t.Fatalf("%d leaves after two bulk writes of 300 and 301 events, want 601", len(inTx))
	}
	// Behind an event without a leaf: the appender held, a write that
	// is not bulk, then a bulk write.
	s.leaves.mu.Lock()
	err = s.inTx(ctx, "one", func(context.Context, *txn) (*changes, error) {
		return &changes{events: bulkEvents(1, 0)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := given(bulkEvents(100, 5001)); err != nil {
		t.Fatal(err)
	}
	if n := len(leafRows(t, s)); n != 601 {
		t.Errorf("%d leaves behind an event without one, want the 601 before it", n)
	}
	s.leaves.mu.Unlock()
	if err := s.settleLeaves(ctx); err != nil {
		t.Fatal(err)
	}
	all := leafRows(t, s)
	if len(all) != 702 {
		t.Fatalf("%d leaves once the appender ran, want 702", len(all))
	}
	// The leaves appendIn computes from the stored rows.
	if _, err := s.db.ExecContext(ctx, "DELETE FROM log_leaves"); err != nil {
		t.Fatal(err)
	}
	for {
		var n int
		err := s.inConnTx(ctx, func(ctx context.Context, tx *txn) error {
			n, err = s.appendIn(ctx, tx, sqlq.Fragment{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n < appendBatch {
			break
		}
	}
	if again := leafRows(t, s); !reflect.DeepEqual(again, all) {
		t.Errorf("the leaves of the bulk writes differ from those computed from their rows")
	}
}

// TestBulkWriteRefusesAnEventWithoutLeaf: an event of a bulk write that
// appends its leaves whose leaf cannot be computed (a salt of another
// size) fails the write with ErrValidation, and nothing of it is stored.
func TestBulkWriteRefusesAnEventWithoutLeaf(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, dbtest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	events := bulkEvents(100, 1)
	events[70].Data = json.RawMessage(`{"name":`)
	err = s.inTx(ctx, "bulk", func(context.Context, *txn) (*changes, error) {
		return &changes{events: events, givenIDs: true, bulk: true, textLater: true}, nil
	})
	if !errors.Is(err, flagadmin.ErrValidation) {
		t.Errorf("a bulk write with data that is not JSON: %v, want ErrValidation", err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM events) + (SELECT COUNT(*) FROM log_leaves)").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d events and leaves stored after the failed write (%v), want none", n, err)
	}
}

// TestPreparedInsertFailureKeepsNothing: a write of events with their
// ids that the database refuses part-way through its prepared INSERTs
// (a unique index made for the test, which the 21st event breaks, in the
// second statement of 16 rows) fails, and none of its events or leaves
// is stored, though each statement keeps the rows it wrote before the
// failure (INSERT OR FAIL): the write's transaction rolls them back. The
// same write without the offending event then stores every event.
func TestPreparedInsertFailureKeepsNothing(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, dbtest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.db.ExecContext(ctx, "CREATE UNIQUE INDEX test_unique_created ON events (created_at)"); err != nil {
		t.Fatal(err)
	}
	given := func(events []flagadmin.Event) error {
		return s.inTx(ctx, "bulk", func(context.Context, *txn) (*changes, error) {
			return &changes{events: events, givenIDs: true, bulk: true}, nil
		})
	}
	events := bulkEvents(40, 1001)
	events[20].CreatedAt = events[17].CreatedAt
	if err := given(events); err == nil {
		t.Fatal("a write that breaks a unique index succeeded")
	}
	if s.inserts.prepared.Load() == nil {
		t.Fatal("the inserts were not prepared")
	}
	var stored, leaves int
	count := func() {
		t.Helper()
		if err := s.db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM events), (SELECT COUNT(*) FROM log_leaves)").Scan(&stored, &leaves); err != nil {
			t.Fatal(err)
		}
	}
	if count(); stored != 0 || leaves != 0 {
		t.Fatalf("after the failed write: %d events and %d leaves stored, want none", stored, leaves)
	}
	if err := given(bulkEvents(40, 1001)); err != nil {
		t.Fatal(err)
	}
	if count(); stored != 40 || leaves != 40 {
		t.Errorf("after the write: %d events and %d leaves stored, want 40 of each", stored, leaves)
	}
}
