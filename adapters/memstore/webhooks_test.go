package memstore_test

import (
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/internal/storetest"
)

func TestSinkContract(t *testing.T) {
	storetest.RunSinks(t, func(t *testing.T) storetest.SinkTestStore { return memstore.New() })
}
