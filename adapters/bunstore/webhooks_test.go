package bunstore_test

import (
	"testing"

	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/storetest"
)

// sinkContract runs the webhook sink state contract with a fresh database per case.
func sinkContract(t *testing.T, newURL func(testing.TB) string) {
	storetest.RunSinks(t, func(t *testing.T) storetest.SinkTestStore { return open(t, newURL(t)) })
}

func TestSinkContractSQLite(t *testing.T)   { sinkContract(t, migratedSQLite("tuned")) }
func TestSinkContractPostgres(t *testing.T) { sinkContract(t, dbtest.Postgres) }
func TestSinkContractMySQL(t *testing.T)    { sinkContract(t, dbtest.MySQL) }
