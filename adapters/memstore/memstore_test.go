package memstore_test

import (
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/storetest"
)

// TestContract runs the storage contract suite on the in-memory store.
func TestContractMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) flagadmin.Store { return memstore.New() })
}
