package bunstore_test

import (
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/internal/storetest"
)

// followContract runs the follow contract suite with a database of its own
// per case, on stores opened with opts.
func followContract(t *testing.T, newURL func(testing.TB) string, opts ...bunstore.Option) {
	t.Parallel()
	storetest.RunFollow(t, func(t *testing.T) storetest.FollowTestStore { return open(t, newURL(t), opts...) })
}

func TestFollowContractSQLite(t *testing.T) { followContract(t, migratedSQLite("tuned")) }

func TestFollowContractPostgres(t *testing.T) { followContract(t, migratedPostgres(t)) }

func TestFollowContractMySQL(t *testing.T) { followContract(t, migratedMySQL(t)) }

func TestFollowContractPlainSQLite(t *testing.T) {
	followContract(t, migratedSQLite("plain", bunstore.WithoutTuning()), bunstore.WithoutTuning())
}

func TestFollowContractPlainPostgres(t *testing.T) {
	followContract(t, migratedPostgres(t, bunstore.WithoutTuning()), bunstore.WithoutTuning())
}

func TestFollowContractPlainMySQL(t *testing.T) {
	followContract(t, migratedMySQL(t, bunstore.WithoutTuning()), bunstore.WithoutTuning())
}
