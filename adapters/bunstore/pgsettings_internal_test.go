package bunstore

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// TestPostgresSessionSettings: the store's connections to PostgreSQL plan
// without parallel workers (each would start cold for every statement)
// and with workMem for each sort, hash or bitmap (a common word's bitmap
// turns lossy at the default 4 MB), with or without a timeout, unless the
// URL sets max_parallel_workers_per_gather or work_mem, which is then
// kept.
func TestPostgresSessionSettings(t *testing.T) {
	ctx := context.Background()
	dsn := dbtest.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(parallelWorkers, "3")
	q.Set(workMemParam, "5MB")
	u.RawQuery = q.Encode()
	for _, c := range []struct {
		name, url       string
		opts            []Option
		workers, memory string
	}{
		{"default", dsn, nil, "0", workMem},
		{"with a timeout", dsn, []Option{WithTimeout(time.Minute)}, "0", workMem},
		{"set by the URL", u.String(), nil, "3", "5MB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(ctx, c.url, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for name, want := range map[string]string{parallelWorkers: c.workers, workMemParam: c.memory} {
				var got string
				if err := s.rdb.NewRaw("SHOW "+name).Scan(ctx, &got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s = %s, want %s", name, got, want)
				}
			}
		})
	}
}
