package bunstore_test

import (
	"testing"

	"github.com/flagadmin/flagadmin/internal/storetest"
)

// sinkContract runs the webhook sink state contract with a database of its
// own per case, as the migration left it.
func sinkContract(t *testing.T, newURL func(testing.TB) string) {
	storetest.RunSinks(t, func(t *testing.T) storetest.SinkTestStore { return open(t, newURL(t)) })
}

func TestSinkContractSQLite(t *testing.T)   { sinkContract(t, migratedSQLite("tuned")) }
func TestSinkContractPostgres(t *testing.T) { sinkContract(t, migratedPostgres(t)) }
func TestSinkContractMySQL(t *testing.T)    { sinkContract(t, migratedMySQL(t)) }
