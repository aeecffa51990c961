package memstore_test

import (
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
	"github.com/flagadmin/flagadmin/internal/retentiontest"
)

// TestRetentionAttacks runs the attacks on retention
// (internal/retentiontest) on the in-memory store, its state edited as
// they edit a database's rows.
func TestRetentionAttacks(t *testing.T) {
	retentiontest.Run(t, func(*testing.T) retentiontest.Store { return tamperedInMemory{memstore.New()} })
}

// tamperedInMemory is a store whose state the attacks edit.
type tamperedInMemory struct{ *memstore.Store }

func (s tamperedInMemory) DeleteEventRow(t *testing.T, id int64) {
	if !memstore.DeleteEventRow(s.Store, id) {
		t.Fatalf("no leaf of event %d", id)
	}
}

func (s tamperedInMemory) MarkPruned(t *testing.T, id int64) {
	if !memstore.MarkPruned(s.Store, id) {
		t.Fatalf("no leaf of event %d", id)
	}
}

func (s tamperedInMemory) EditLeaf(t *testing.T, id int64, edit func(*vlog.Leaf)) {
	if !memstore.EditLeaf(s.Store, id, edit) {
		t.Fatalf("no leaf of event %d", id)
	}
}
