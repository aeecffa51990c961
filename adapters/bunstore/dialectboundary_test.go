package bunstore_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The store is one body of SQL that asks its dialect (dialect.go) what
// differs between the databases; a package per database under
// internal/dialects answers, and Open picks one. These tests keep it so:
// the core never asks which database it runs on, and the dialects never
// import the core.

const (
	// bunDialect is bun's package of database names.
	bunDialect = "github.com/uptrace/bun/dialect"
	// ownDialects holds the store's packages of one dialect each.
	ownDialects = "github.com/flagadmin/flagadmin/adapters/bunstore/internal/dialects"
	// core is the store's own package.
	core = "github.com/flagadmin/flagadmin/adapters/bunstore"
)

// databaseNames are bun's names of databases (dialect.PG, ...), and the
// strings they stand for.
var (
	databaseNames   = []string{"PG", "MySQL", "SQLite", "MSSQL", "Oracle", "Invalid"}
	databaseStrings = []string{`"pg"`, `"mysql"`, `"sqlite"`, `"mssql"`, `"oracle"`}
)

// dialectProblems returns what in the core's file name (its source src)
// asks which database the store runs on, "" for nothing:
//
//   - an import of one of bun's dialects (pgdialect, ...), which only the
//     dialect packages make; of bun's package of names anywhere but in
//     dialect.go (the interface's Name); of a dialect package anywhere
//     but in open.go, which picks one;
//   - a name of a database (dialect.PG, ...), or a question to bun
//     (db.Dialect().Name());
//   - a comparison, switch or map look-up on the dialect, or of a string
//     that names a database outside open.go (which reads the URL's
//     scheme).
func dialectProblems(name, src string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	report := func(n ast.Node, what string) {
		out = append(out, fset.Position(n.Pos()).String()+": "+what)
	}
	namesLocal := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch {
		case strings.HasPrefix(path, bunDialect+"/"):
			report(imp, "imports bun's dialect "+path+": the dialect's NewDB makes the database")
		case path == bunDialect:
			namesLocal = "dialect"
			if imp.Name != nil {
				namesLocal = imp.Name.Name
			}
			if name != "dialect.go" {
				report(imp, "imports bun's names of databases")
			}
		case (path == ownDialects || strings.HasPrefix(path, ownDialects+"/")) && name != "open.go":
			report(imp, "imports the dialect "+path+": Open picks it, the rest asks it")
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == namesLocal && slices.Contains(databaseNames, n.Sel.Name) {
				report(n, "names the database "+namesLocal+"."+n.Sel.Name)
			}
			if call, ok := n.X.(*ast.CallExpr); ok && n.Sel.Name == "Name" && calls(call, "Dialect") {
				report(n, "asks bun which database it is (Dialect().Name())")
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				for _, side := range []ast.Expr{n.X, n.Y} {
					checkOperand(side, name, report)
				}
			}
		case *ast.SwitchStmt:
			if n.Tag != nil {
				checkOperand(n.Tag, name, report)
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				checkOperand(e, name, report)
			}
		case *ast.IndexExpr:
			checkOperand(n.Index, name, report)
		case *ast.TypeSwitchStmt:
			if mentionsDialect(n.Assign) {
				report(n, "switches on the dialect's type")
			}
		}
		return true
	})
	return out, nil
}

// checkOperand reports an operand of a comparison, switch or look-up that
// is the dialect, or a string naming a database outside open.go.
func checkOperand(e ast.Expr, file string, report func(ast.Node, string)) {
	if mentionsDialect(e) {
		report(e, "compares the dialect")
	}
	if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING && file != "open.go" && slices.Contains(databaseStrings, lit.Value) {
		report(e, "compares with the name of a database "+lit.Value)
	}
}

// mentionsDialect reports whether n refers to the store's dialect: the
// field dialect or sqlDialect, a variable whose name says dialect, bun's
// Dialect(), or a name read by Name().
func mentionsDialect(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			found = found || calls(n, "Name") && len(n.Args) == 0
		case *ast.SelectorExpr:
			found = found || strings.Contains(strings.ToLower(n.Sel.Name), "dialect")
		case *ast.Ident:
			found = found || strings.Contains(strings.ToLower(n.Name), "dialect")
		}
		return !found
	})
	return found
}

// calls reports whether call calls a method named method.
func calls(call *ast.CallExpr, method string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == method
}

// checkCore reports as errors of t the problems that find sees in each
// file of the core (its non-test Go files), given its name and source.
func checkCore(t *testing.T, find func(name, src string) ([]string, error)) {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		files++
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		problems, err := find(name, string(src))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
	if files < 20 {
		t.Fatalf("read %d core files, want the package's sources", files)
	}
}

// problemCase is a source a checker of the core reads as the file file,
// and part of the problem it must find, "" for none.
type problemCase struct {
	name, file, src, want string
}

// checkProblemCases runs find on each case.
func checkProblemCases(t *testing.T, find func(name, src string) ([]string, error), cases []problemCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := find(c.file, c.src)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" && len(got) > 0 {
				t.Errorf("got problems %q, want none", got)
			}
			if c.want != "" && !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, c.want) }) {
				t.Errorf("got problems %q, want one saying %q", got, c.want)
			}
		})
	}
}

// TestCoreAsksNotWhichDatabase fails when a file of the core asks which
// database the store runs on.
func TestCoreAsksNotWhichDatabase(t *testing.T) { checkCore(t, dialectProblems) }

// TestDialectProblems shows that dialectProblems finds each way of asking
// which database, and lets the dialect's answers through.
func TestDialectProblems(t *testing.T) {
	const head = "package bunstore\n\nimport (\n\t\"github.com/uptrace/bun/dialect\"\n)\n\n"
	checkProblemCases(t, dialectProblems, []problemCase{
		{"a question to the dialect", "tx.go", "package bunstore\n\nfunc f(s *Store) bool { return s.sqlDialect.SingleWriter() }\n", ""},
		{"an ability by type assertion", "record.go", "package bunstore\n\nfunc f(s *Store) bool { _, ok := s.sqlDialect.(eventInserter); return ok }\n", ""},
		{"the name passed on", "search.go", "package bunstore\n\nfunc f(s *Store) { g(s.sqlDialect.Name()) }\n", ""},
		{"the choice in Open", "open.go", "package bunstore\n\nimport (\n\t\"github.com/flagadmin/flagadmin/adapters/bunstore/internal/dialects/sqlite\"\n)\n\nfunc f(s *Store, scheme string) {\n\tswitch scheme {\n\tcase \"sqlite\":\n\t\ts.sqlDialect = sqlite.Dialect{}\n\t}\n}\n", ""},
		{"bun's names imported", "tx.go", head, "imports bun's names"},
		{"a comparison of the name", "tx.go", "package bunstore\n\nfunc f(s *Store) bool { return s.dialect != x }\n", "compares the dialect"},
		{"a name of a database", "open.go", head + "var x = dialect.SQLite\n", "names the database dialect.SQLite"},
		{"a switch on the name", "webhooks.go", "package bunstore\n\nfunc f(s *Store) {\n\tswitch s.dialect {\n\t}\n}\n", "compares the dialect"},
		{"a case of the name", "webhooks.go", "package bunstore\n\nfunc f(s *Store) {\n\tswitch {\n\tcase s.sqlDialect.Name() == x:\n\t}\n}\n", "compares the dialect"},
		{"a question to bun", "ids.go", "package bunstore\n\nfunc f(tx bun.IDB) { g(tx.Dialect().Name()) }\n", "asks bun"},
		{"a string naming a database", "ids.go", "package bunstore\n\nfunc f(n string) bool { return n == \"pg\" }\n", "name of a database"},
		{"a look-up by name", "migrations.go", "package bunstore\n\nfunc f(d sqlDialect) string { return files[d.Name()] }\n", "compares the dialect"},
		{"a switch on the type", "load.go", "package bunstore\n\nfunc f(s *Store) {\n\tswitch s.sqlDialect.(type) {\n\t}\n}\n", "switches on the dialect's type"},
		{"bun's dialect", "migrate.go", "package bunstore\n\nimport (\n\t\"github.com/uptrace/bun/dialect/sqlitedialect\"\n)\n", "imports bun's dialect"},
		{"a dialect package outside Open", "migrate.go", "package bunstore\n\nimport (\n\t\"github.com/flagadmin/flagadmin/adapters/bunstore/internal/dialects/sqlite\"\n)\n", "imports the dialect"},
	})
}

// TestDialectsImportNotTheCore fails when a dialect package imports the
// store's core (which imports them: Go would refuse the cycle, but only
// once open.go imports the package) or another dialect.
func TestDialectsImportNotTheCore(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("internal", "dialects", "*"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	packages := 0
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		own := ownDialects + "/" + filepath.Base(dir)
		for _, file := range files {
			f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				switch {
				case path == core:
					t.Errorf("%s imports the store's core %s", file, path)
				case strings.HasPrefix(path, ownDialects+"/") && path != own:
					t.Errorf("%s imports another dialect, %s", file, path)
				case strings.HasPrefix(path, "github.com/flagadmin/flagadmin/adapters/") && !strings.HasPrefix(path, core+"/internal/"):
					t.Errorf("%s imports %s, an adapter", file, path)
				}
			}
		}
		packages++
	}
	if packages < 3 {
		t.Fatalf("found %d dialect packages, want one per database", packages)
	}
}
