package bunstore_test

import (
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
)

func TestRedactURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://u:secret@h:5432/db?sslmode=disable", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		{"mysql://root@h:3306/db", "mysql://root@h:3306/db"},
		{"sqlite:/tmp/a.db", "sqlite:/tmp/a.db"},
		{"memory:", "memory:"},
		{"postgres://u:secret@h:bad port/db", "postgres://..."},
	} {
		if got := bunstore.RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q): got %q, want %q", c.in, got, c.want)
		}
	}
}
