package bunstore_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The core reaches its speed-ups through one interface it owns, its
// summaries (summaries.go): Open picks them (internal/tuned, which puts
// the speed-up packages together, or the plain ones), and the rest of the
// core calls them. These tests keep it so: no core file imports a
// speed-up package, only open.go imports internal/tuned, and no package
// under internal/ imports the core; of them only internal/tuned imports a
// speed-up.

// internalPath is the import path of the store's package dir under
// internal/.
func internalPath(dir string) string { return core + "/internal/" + dir }

// speedUps are the store's speed-up packages, each behind the summaries.
var speedUps = []string{"eventcounts", "projectfigures", "pgpage", "textindex", "proofread"}

// tunedDir is the package that puts the speed-ups together.
const tunedDir = "tuned"

// roles says what each package under internal/ is, so that a new one is
// placed before it is used: a speed-up, the summaries' composition, a
// dialect (under dialects/), or a helper every part may use.
var roles = func() map[string]string {
	r := map[string]string{tunedDir: "tuned"}
	for _, d := range speedUps {
		r[d] = "speed-up"
	}
	for _, d := range []string{"dialects/mysql", "dialects/postgres", "dialects/sqlite"} {
		r[d] = "dialect"
	}
	for _, d := range []string{"dberr", "driverconn", "indexbuild", "lent", "sqlitefile", "sqlq", "stored", "summary"} {
		r[d] = "helper"
	}
	return r
}()

// summaryProblems returns what in the core's file name (its source src)
// reaches a speed-up other than through the summaries: an import of a
// speed-up package, or of internal/tuned anywhere but in open.go, which
// picks the summaries.
func summaryProblems(name, src string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch {
		case slices.ContainsFunc(speedUps, func(d string) bool { return path == internalPath(d) }):
			out = append(out, fset.Position(imp.Pos()).String()+": imports the speed-up "+path+": the core reaches it through its summaries")
		case path == internalPath(tunedDir) && name != "open.go":
			out = append(out, fset.Position(imp.Pos()).String()+": imports "+path+": Open picks the summaries, the rest calls them")
		}
	}
	return out, nil
}

// TestCoreImportsNoSpeedUp fails when a file of the core imports a
// speed-up package, or internal/tuned outside open.go.
func TestCoreImportsNoSpeedUp(t *testing.T) {
	checkCore(t, summaryProblems)
}

// TestSummaryProblems shows that summaryProblems finds each way of
// reaching a speed-up, and lets the summaries through.
func TestSummaryProblems(t *testing.T) {
	imports := func(path string) string {
		return "package bunstore\n\nimport (\n\t" + strconv.Quote(path) + "\n)\n"
	}
	checkProblemCases(t, summaryProblems, []problemCase{
		{"a call to the summaries", "search.go", "package bunstore\n\nfunc f(s *Store) { s.summaries.PlanSearch(q) }\n", ""},
		{"their vocabulary", "search.go", imports(internalPath("summary")), ""},
		{"the choice in Open", "open.go", imports(internalPath(tunedDir)), ""},
		{"the composition outside Open", "projects.go", imports(internalPath(tunedDir)), "Open picks the summaries"},
		{"the counts", "projects.go", imports(internalPath("eventcounts")), "imports the speed-up"},
		{"the page statements", "export.go", imports(internalPath("pgpage")), "imports the speed-up"},
		{"the text index", "search.go", imports(internalPath("textindex")), "imports the speed-up"},
		{"the proof reads", "log.go", imports(internalPath("proofread")), "imports the speed-up"},
		{"the figures", "tuning.go", imports(internalPath("projectfigures")), "imports the speed-up"},
		{"a speed-up even in Open", "open.go", imports(internalPath("eventcounts")), "imports the speed-up"},
	})
}

// TestInternalPackagesImportNotTheCore fails when a package under
// internal/ imports the store's core (which imports some of them: Go
// would refuse the cycle, but only once the core imports the package), a
// package other than internal/tuned imports a speed-up, or any imports
// internal/tuned; and when a package has no role (roles).
func TestInternalPackagesImportNotTheCore(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir("internal", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		dir := filepath.ToSlash(strings.TrimPrefix(filepath.Dir(path), "internal"+string(filepath.Separator)))
		role, ok := roles[dir]
		if !ok {
			t.Errorf("internal/%s has no role in roles: a speed-up (behind the summaries), a dialect or a helper", dir)
		}
		seen[dir] = true
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			other := strings.TrimPrefix(p, core+"/internal/")
			switch {
			case p == core:
				t.Errorf("%s imports the store's core %s", path, p)
			case roles[other] == "speed-up" && role != "tuned":
				t.Errorf("%s imports the speed-up %s: only internal/%s puts them together", path, p, tunedDir)
			case other == tunedDir:
				t.Errorf("%s imports %s: only the core's Open does", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range roles {
		if !seen[dir] {
			t.Errorf("roles names internal/%s, which holds no package", dir)
		}
	}
}
