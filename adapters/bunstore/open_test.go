package bunstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestOpenRejectsBadURLs(t *testing.T) {
	cases := []struct {
		url, want string
	}{
		{"oracle://scott:tiger@db/x", `unsupported database URL scheme "oracle"`},
		{"/tmp/flagadmin.db", `unsupported database URL scheme "/tmp/flagadmin.db"`},
		{"", "unsupported database URL scheme"},
		{"sqlite:", "invalid sqlite URL"},
		{"sqlite:/tmp/x.db?mode=ro", "invalid sqlite URL"},
		{"mysql://root@127.0.0.1:3306", "a database name is required"},
		{"mysql://root@127.0.0.1:3306/", "a database name is required"},
		{"mysql:///test", "a host is required"},
		{"mysql://root@127.0.0.1/test?parseTime=maybe", "invalid mysql URL parameters"},
		{"postgres://u:secret@127.0.0.1:5432/db?sslmode=sometimes", "invalid postgres URL"},
	}
	for _, c := range cases {
		_, err := bunstore.Open(context.Background(), c.url)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q): got error %v, want one containing %q", c.url, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q): the error %q shows the password", c.url, err)
		}
	}
}

func TestOpenUnreachableIsUnavailable(t *testing.T) {
	for _, url := range []string{
		"postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5",
		"mysql://root@127.0.0.1:1/test?timeout=5s",
		"sqlite:/nonexistent-dir/sub/flagadmin.db",
	} {
		_, err := bunstore.Open(context.Background(), url)
		if !errors.Is(err, flagadmin.ErrUnavailable) {
			t.Errorf("Open(%q): got %v, want ErrUnavailable", url, err)
		}
	}
}

func TestOpenSQLiteForms(t *testing.T) {
	dir := t.TempDir()
	for _, url := range []string{
		"sqlite:" + dir + "/a.db",
		"sqlite://" + dir + "/b.db",
		"sqlite::memory:",
		"SQLITE:" + dir + "/c.db",
	} {
		s := open(t, url)
		newFixture(t, s)
		if got := len(events(t, s)); got != 4 {
			t.Errorf("%s: got %d events, want 4", url, got)
		}
	}
}

// TestMemoryIsOneDatabase checks that sqlite::memory: is one database shared
// by every use of the store, not one per connection.
func TestMemoryIsOneDatabase(t *testing.T) {
	s := open(t, "sqlite::memory:")
	f := newFixture(t, s)
	ctx := context.Background()
	done := make(chan error, 20)
	for range 20 {
		go func() {
			_, err := s.User(ctx, f.account.ID)
			done <- err
		}()
	}
	for range 20 {
		if err := <-done; err != nil {
			t.Errorf("User from another goroutine: %v", err)
		}
	}
	other := open(t, "sqlite::memory:")
	if _, err := other.User(ctx, f.account.ID); !errors.Is(err, flagadmin.ErrNotFound) {
		t.Errorf("a second in-memory store: got %v, want ErrNotFound (stores are separate)", err)
	}
}
