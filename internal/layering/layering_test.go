// Package layering_test keeps the imports between the module's parts as
// docs/architecture.md draws them: the domain imports the standard library
// only, its siblings (following, the verifiable log, the upstream errors)
// the domain besides; an adapter imports no other adapter but the two
// encoders several share (adapters/eventjson and adapters/tlog/leaf); and
// fx is known to cmd/ only.
package layering_test

import (
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/flagadmin/flagadmin/"

// shared are the adapter packages every adapter may import.
var shared = []string{module + "adapters/eventjson", module + "adapters/tlog/leaf"}

// root is the module's directory, relative to this package.
var root = filepath.Join("..", "..")

// imports returns the imports of every non-test Go file under dir (a path
// relative to the module), by the file's path relative to the module.
func imports(t *testing.T, dir string) map[string][]string { return importsOf(t, dir, true) }

// importsOf is imports, of dir's own files only unless below.
func importsOf(t *testing.T, dir string, below bool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	top := filepath.Join(root, dir)
	err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && path != top && !below {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out[filepath.ToSlash(rel)] = append(out[filepath.ToSlash(rel)], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%d files under %s: the path is not the module's", len(out), dir)
	}
	return out
}

// TestDomainImports: the domain package imports the standard library
// only; each of its siblings the standard library and the domain, never an
// adapter (the domain cannot import a sibling back: Go refuses the cycle).
func TestDomainImports(t *testing.T) {
	for dir, domain := range map[string]string{
		"flagadmin":          "",
		"flagadmin/follow":   module + "flagadmin",
		"flagadmin/vlog":     module + "flagadmin",
		"flagadmin/upstream": module + "flagadmin",
	} {
		for file, imps := range importsOf(t, dir, false) {
			for _, p := range imps {
				if p == domain {
					continue
				}
				if pkg, err := build.Default.Import(p, ".", build.FindOnly); err != nil || !pkg.Goroot {
					t.Errorf("%s imports %q, which is not a standard library package", file, p)
				}
			}
		}
	}
}

// adapterOf is the adapter a module path or file path belongs to
// ("bunstore" for adapters/bunstore/internal/stored), "" for none.
func adapterOf(path string) string {
	rest, ok := strings.CutPrefix(strings.TrimPrefix(path, module), "adapters/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// TestAdaptersImportNoOtherAdapter: an adapter's files import its own
// packages, the domain and libraries, and of other adapters only the
// shared encoders.
func TestAdaptersImportNoOtherAdapter(t *testing.T) {
	for file, imps := range imports(t, "adapters") {
		own := adapterOf(file)
		for _, p := range imps {
			other := adapterOf(p)
			if other == "" || other == own || strings.HasPrefix(p, module+"adapters/"+own+"/") {
				continue
			}
			if slices.Contains(shared, p) {
				continue
			}
			t.Errorf("%s (adapter %s) imports the adapter %s", file, own, p)
		}
	}
}

// TestFxOnlyInCmd: no package outside cmd/ imports fx.
func TestFxOnlyInCmd(t *testing.T) {
	for _, dir := range []string{"flagadmin", "adapters", "internal", "examples"} {
		for file, imps := range imports(t, dir) {
			for _, p := range imps {
				if p == "go.uber.org/fx" || strings.HasPrefix(p, "go.uber.org/fx/") {
					t.Errorf("%s imports %s: fx belongs to cmd/ only", file, p)
				}
			}
		}
	}
}
