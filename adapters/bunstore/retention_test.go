package bunstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/retentiontest"
)

// The attacks on retention (internal/retentiontest) on every engine: the
// log is written through the store, the attacker's edits are statements
// on its tables, sent on a connection of their own, as someone who can
// write the database but holds no signing key sends them.

func TestRetentionAttacks(t *testing.T) {
	forMigratedEngines(t, func(t *testing.T, newURL func(testing.TB) string) {
		retentiontest.Run(t, func(t *testing.T) retentiontest.Store {
			url := newURL(t)
			return &tamperedByHand{Store: open(t, url), db: dbtest.Raw(t, url), pg: strings.HasPrefix(url, "postgres")}
		})
	})
}

// tamperedByHand is a store whose rows an attacker edits with SQL.
type tamperedByHand struct {
	*bunstore.Store
	db *sql.DB
	// pg: the statements' placeholders are $1, $2, ...
	pg bool
}

var _ retentiontest.Store = (*tamperedByHand)(nil)

// exec runs query, its placeholders written ?, with args.
func (s *tamperedByHand) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if s.pg {
		for i := 1; strings.Contains(query, "?"); i++ {
			query = strings.Replace(query, "?", fmt.Sprintf("$%d", i), 1)
		}
	}
	res, err := s.db.ExecContext(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("%s %v: %d rows changed (%v), want 1", query, args, n, err)
	}
}

func (s *tamperedByHand) DeleteEventRow(t *testing.T, id int64) {
	s.exec(t, "DELETE FROM events WHERE id = ?", id)
}

// MarkPruned sets the flag; the salt is in the event's row, gone with it.
func (s *tamperedByHand) MarkPruned(t *testing.T, id int64) {
	s.exec(t, "UPDATE log_leaves SET pruned = ? WHERE event_id = ?", true, id)
}

func (s *tamperedByHand) EditLeaf(t *testing.T, id int64, edit func(*vlog.Leaf)) {
	t.Helper()
	size, err := s.LogSize(context.Background())
	must(t, "LogSize", err)
	leaves, err := s.LogLeaves(context.Background(), 0, size)
	must(t, "LogLeaves", err)
	for _, l := range leaves {
		if l.EventID != id {
			continue
		}
		edit(&l)
		s.exec(t, "UPDATE log_leaves SET created_at = ?, project = ?, type = ?, content = ?, hash = ? WHERE event_id = ?",
			l.CreatedAt.UnixMilli(), l.Project, l.Type, l.Content[:], l.Hash[:], id)
		return
	}
	t.Fatalf("no leaf of event %d", id)
}

// TestRetentionAttackEditsReachTheTables checks the attacker's edits
// against what the store reads back: a row gone, a leaf marked pruned, a
// tombstone's fields rewritten, its hash kept.
func TestRetentionAttackEditsReachTheTables(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		s := &tamperedByHand{Store: open(t, url), db: dbtest.Raw(t, url), pg: strings.HasPrefix(url, "postgres")}
		h := retentiontest.NewHarness(t, s)
		ids := h.Write(retentiontest.T0, 3, "default")
		s.DeleteEventRow(t, ids[1])
		s.MarkPruned(t, ids[1])
		s.EditLeaf(t, ids[1], func(l *vlog.Leaf) { l.CreatedAt, l.Project = retentiontest.T0.AddDate(-1, 0, 0), nil })
		leaves, err := s.LogLeaves(context.Background(), 0, 3)
		must(t, "LogLeaves", err)
		l := leaves[1]
		if !l.Pruned || !l.CreatedAt.Equal(retentiontest.T0.AddDate(-1, 0, 0)) || l.Project != nil || l.Salt != nil {
			t.Errorf("the edited leaf: got %+v, want pruned, a year older, no project, no salt", l)
		}
		if leaf.LeafOf(l) == l.Hash {
			t.Errorf("the edited leaf's fields still hash to its hash")
		}
		for _, e := range events(t, s) {
			if e.ID == ids[1] {
				t.Errorf("event %d: not deleted", e.ID)
			}
		}
	})
}
