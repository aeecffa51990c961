package bunstore_test

import (
	"testing"

	"github.com/flagadmin/flagadmin/internal/storetest"
)

func TestLoad(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			storetest.RunLoad(t, func(t *testing.T) storetest.Loader { return open(t, e.url(t)) })
		})
	}
}
