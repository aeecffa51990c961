package bunstore_test

import (
	"context"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/storetest"
)

// open opens a store on url and closes it when t ends.
func open(t testing.TB, url string, opts ...bunstore.Option) *bunstore.Store {
	t.Helper()
	s, err := bunstore.Open(context.Background(), url, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// contract runs the store contract suite with a database of its own per case,
// on stores opened with opts, in parallel with the other suites (each on
// databases of its own).
func contract(t *testing.T, newURL func(testing.TB) string, opts ...bunstore.Option) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) flagadmin.Store { return open(t, newURL(t), opts...) })
}

func TestContractSQLite(t *testing.T) { contract(t, migratedSQLite("tuned")) }

func TestContractSQLiteMemory(t *testing.T) {
	contract(t, func(testing.TB) string { return "sqlite::memory:" })
}

func TestContractPostgres(t *testing.T) { contract(t, migratedPostgres(t)) }

func TestContractMySQL(t *testing.T) { contract(t, migratedMySQL(t)) }

// The plain store (every speed-up off) is the reference the tuned one
// must agree with: the same suite, every answer computed from the base
// tables.

func TestContractPlainSQLite(t *testing.T) {
	contract(t, migratedSQLite("plain", bunstore.WithoutTuning()), bunstore.WithoutTuning())
}

func TestContractPlainPostgres(t *testing.T) {
	contract(t, migratedPostgres(t, bunstore.WithoutTuning()), bunstore.WithoutTuning())
}

func TestContractPlainMySQL(t *testing.T) {
	contract(t, migratedMySQL(t, bunstore.WithoutTuning()), bunstore.WithoutTuning())
}
