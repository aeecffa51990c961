package bunstore_test

import (
	"context"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/storetest"
)

// open opens a store on url and closes it when t ends.
func open(t *testing.T, url string, opts ...bunstore.Option) *bunstore.Store {
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

// contract runs the store contract suite with a fresh database per case.
func contract(t *testing.T, newURL func(testing.TB) string) {
	storetest.Run(t, func(t *testing.T) flagadmin.Store { return open(t, newURL(t)) })
}

func TestContractSQLite(t *testing.T) { contract(t, dbtest.SQLite) }

func TestContractSQLiteMemory(t *testing.T) {
	contract(t, func(testing.TB) string { return "sqlite::memory:" })
}

func TestContractPostgres(t *testing.T) { contract(t, dbtest.Postgres) }

func TestContractMySQL(t *testing.T) { contract(t, dbtest.MySQL) }
