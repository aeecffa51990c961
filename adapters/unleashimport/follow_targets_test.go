package unleashimport_test

import (
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// followStore is a store a follower writes into, and the same store as
// flagadmin.Store for reading the copy.
type followStore interface {
	unleashimport.FollowStore
	flagadmin.Store
}

// followTarget is a kind of store the follower is tested into: memory, or
// a SQL database (skipped without its server, see internal/dbtest).
type followTarget struct {
	name   string
	newURL func(testing.TB) string // nil: memory
}

// followTargets are the stores the follower's tests run into.
var followTargets = []followTarget{
	{"memory", nil},
	{"sqlite", dbtest.SQLite},
	{"postgres", dbtest.Postgres},
	{"mysql", dbtest.MySQL},
}

// forEachTarget runs test into every kind of store, the stores in
// parallel: each run has its own source and store, and spends most of its
// time waiting for the follower.
func forEachTarget(t *testing.T, test func(t *testing.T, target followTarget)) {
	for _, target := range followTargets {
		t.Run(target.name, func(t *testing.T) {
			t.Parallel()
			test(t, target)
		})
	}
}

// open returns a new, empty store of the target.
func (tg followTarget) open(t *testing.T) followStore {
	t.Helper()
	if tg.newURL == nil {
		return memstore.New()
	}
	return openBun(t, tg.newURL(t))
}

// openShared returns a new, empty store of the target and a second handle
// on the same database, as a second server (or a restarted one) opens it;
// in memory, the same store.
func (tg followTarget) openShared(t *testing.T) (followStore, followStore) {
	t.Helper()
	if tg.newURL == nil {
		s := memstore.New()
		return s, s
	}
	url := tg.newURL(t)
	return openBun(t, url), openBun(t, url)
}
