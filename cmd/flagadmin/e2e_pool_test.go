package main

import (
	"strconv"
	"testing"

	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// TestEndToEndDBMaxConns runs the binary on PostgreSQL with and without
// FLAGADMIN_DB_MAX_CONNS: the pool it opens is bounded by the setting,
// or by the default of 8, as its metrics report.
func TestEndToEndDBMaxConns(t *testing.T) {
	bin := buildBinary(t)
	db := dbtest.Postgres(t)
	for _, tc := range []struct {
		env  string
		want float64
	}{{"FLAGADMIN_DB_MAX_CONNS=3", 3}, {"", float64(defaultDBMaxConns)}} {
		addr := freeAddr(t)
		base := "http://" + addr
		env := []string{"FLAGADMIN_ADDR=" + addr, "FLAGADMIN_DB=" + db, "FLAGADMIN_SEED=", "FLAGADMIN_ADMIN_TOKENS=*:*.e2e-admin"}
		if tc.env != "" {
			env = append(env, tc.env)
		}
		p := startBinary(t, bin, env...)
		p.waitReady(t, base)
		got, ok := sample(scrape(t, base+metricsPath), "flagadmin_db_pool_max_open_connections", map[string]string{"pool": "main"})
		p.stop(t)
		if !ok || got != tc.want {
			t.Errorf("%q: flagadmin_db_pool_max_open_connections{pool=\"main\"} = %v (reported: %v), want %s", tc.env, got, ok, strconv.FormatFloat(tc.want, 'f', -1, 64))
		}
	}
}
