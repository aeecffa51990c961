package memstore_test

import (
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/internal/storetest"
)

func TestLoad(t *testing.T) {
	storetest.RunLoad(t, func(t *testing.T) storetest.Loader { return memstore.New() })
}
