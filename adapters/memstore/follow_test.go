package memstore_test

import (
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/internal/storetest"
)

func TestFollowContract(t *testing.T) {
	storetest.RunFollow(t, func(t *testing.T) storetest.FollowTestStore { return memstore.New() })
}
