// Package complexity_test keeps every shipped function of the domain, the
// adapters and the server command at a cyclomatic complexity of 15 or
// less (as gocyclo counts it): a function past that is split into steps
// that can be read, and tested, one at a time.
package complexity_test

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/fzipp/gocyclo"
)

// limit is the highest complexity a shipped function may have.
const limit = 15

// TestNoShippedFunctionAboveTheLimit analyzes the shipped code (tests
// aside) of flagadmin/, adapters/ and cmd/flagadmin.
func TestNoShippedFunctionAboveTheLimit(t *testing.T) {
	root := filepath.Join("..", "..")
	dirs := []string{filepath.Join(root, "flagadmin"), filepath.Join(root, "adapters"), filepath.Join(root, "cmd", "flagadmin")}
	stats := gocyclo.Analyze(dirs, regexp.MustCompile(`_test\.go$`))
	if len(stats) < 100 {
		t.Fatalf("analyzed %d functions; the paths %v are not the module's", len(stats), dirs)
	}
	for _, s := range stats.SortAndFilter(-1, limit) {
		t.Errorf("%s.%s at %s has complexity %d, over %d: split it into steps", s.PkgName, s.FuncName, s.Pos, s.Complexity, limit)
	}
}
