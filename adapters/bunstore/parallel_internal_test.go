package bunstore

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// TestPostgresRunsWithoutParallelWorkers: the store's connections to
// PostgreSQL plan without parallel workers (each would start cold for
// every statement), with or without a timeout, unless the URL sets
// max_parallel_workers_per_gather, which is then kept.
func TestPostgresRunsWithoutParallelWorkers(t *testing.T) {
	ctx := context.Background()
	dsn := dbtest.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(parallelWorkers, "3")
	u.RawQuery = q.Encode()
	for _, c := range []struct {
		name, url string
		opts      []Option
		want      string
	}{
		{"default", dsn, nil, "0"},
		{"with a timeout", dsn, []Option{WithTimeout(time.Minute)}, "0"},
		{"set by the URL", u.String(), nil, "3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(ctx, c.url, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got string
			if err := s.rdb.NewRaw("SHOW "+parallelWorkers).Scan(ctx, &got); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("%s = %s, want %s", parallelWorkers, got, c.want)
			}
		})
	}
}
