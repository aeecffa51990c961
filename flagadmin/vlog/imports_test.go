package vlog_test

import (
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// domain is the one package outside the standard library that the log
// may import: the domain it is the log of.
const domain = "github.com/flagadmin/flagadmin/flagadmin"

// TestImportsOnlyTheDomain keeps the log beside the rules: every import
// of the package's non-test files is the domain package or a standard
// library package, never an adapter. (The domain cannot import this
// package back: Go refuses the cycle.)
func TestImportsOnlyTheDomain(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		files++
		f, err := parser.ParseFile(fset, filepath.Join(".", name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if path == domain {
				continue
			}
			pkg, err := build.Default.Import(path, ".", build.FindOnly)
			if err != nil || !pkg.Goroot {
				t.Errorf("%s imports %q, which is neither %s nor a standard library package", name, path, domain)
			}
		}
	}
	if files < 4 {
		t.Fatalf("found %d non-test Go files, want the package's sources", files)
	}
}
