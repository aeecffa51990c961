// Package sourcecomments_test keeps the comments of the source
// self-contained: a comment states the rule it relies on and describes the
// code as it is. It never sends the reader to a document the repository
// does not hold (a private specification's files or numbered sections, an
// issue, a work session), nor tells what the code was before.
package sourcecomments_test

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the module's directory, relative to this package.
var root = filepath.Join("..", "..")

// rfcSection matches a section of an RFC ("RFC 9162 §2.1.3"), which a
// reader finds in public: it is taken out of a line before outside looks
// at it.
var rfcSection = regexp.MustCompile(`RFC \d+,? (§ ?|[Ss]ection )\d+(\.\d+)*`)

// outside matches what points at text a reader of the repository does not
// have: the private specification's files, any numbered section other than
// an RFC's, issues and pull requests by number, work sessions and paths of
// the machine the code was written on.
var outside = regexp.MustCompile(`(?i)\b(decisions|admin-api|seed-format|style)\.md\b|§|\bissues? #?\d+|\bpull request\b|\bPR #?\d+|\b(this|that|first|second|previous|earlier|last|next) session\b|/work/|\bshared/spec\b`)

// history matches what tells how the code was rather than how it is.
var history = regexp.MustCompile(`(?i)\b(was once|used to be|previously|formerly|now that|no longer does|before (the|this) (fix|change|rewrite|refactor))\b`)

// problem returns what is wrong with a line of a comment, "" for nothing.
func problem(line string) string {
	if m := outside.FindString(rfcSection.ReplaceAllString(line, "")); m != "" {
		return fmt.Sprintf("names %q, a text outside the repository: state the rule itself", m)
	}
	if m := history.FindString(line); m != "" {
		return fmt.Sprintf("tells history (%q): describe the code as it is", m)
	}
	return ""
}

// problems returns the problem of each of a comment's lines, "" for none.
// A problem cut by a line break ("issue" at the end of one line, its
// number at the start of the next) is the first line's.
func problems(lines []string) []string {
	out := make([]string, len(lines))
	for i, line := range lines {
		out[i] = problem(line)
		if out[i] == "" && i+1 < len(lines) && problem(lines[i+1]) == "" {
			out[i] = problem(line + " " + strings.TrimLeft(lines[i+1], "/*#- \t"))
		}
	}
	return out
}

// TestProblem holds the rules to lines that break them and lines that do
// not.
func TestProblem(t *testing.T) {
	for _, c := range []struct {
		line string
		bad  bool
	}{
		{"the order of decisions §4", true},
		{"see decisions.md", true},
		{"as admin-api.md says", true},
		{"a seed file (seed-format.md)", true},
		{"style.md asks for it", true},
		{"the contract §12", true},
		{"(§3)", true},
		{"fixed in issue 10, defect 8", true},
		{"see issue #42", true},
		{"done in the previous session", true},
		{"/work/shared/fixtures", true},
		{"It was once a row of its own.", true},
		{"what queryPage used to be", true},
		{"previously it read every row", true},
		{"now that the server sends next links", true},
		{"before the fix it was 500", true},
		{"proofs of RFC 9162 §2.1", false},
		{"weakly as RFC 9110 §13.1.2 says", false},
		{"(RFC 9162 §2.1.3.1)", false},
		{"the token no longer authenticates", false},
		{"the contract suite holds every store to it", false},
		{"Unleash's session cookie", false},
		{"docs/api.md, \"Errors\"", false},
		{"the token used to reach them", false},
		{"right before the commit", false},
	} {
		if got := problem(c.line) != ""; got != c.bad {
			t.Errorf("problem(%q) = %q, want a problem: %v", c.line, problem(c.line), c.bad)
		}
	}
	got := problems([]string{"// a difference would tell (issue", "// 10, defect 8). Compare", "// with benchstat."})
	if got[0] == "" || got[1] != "" || got[2] != "" {
		t.Errorf("problems of an issue number cut by a line break = %q, want the first line's only", got)
	}
}

// TestGoComments reads every comment of every .go file of the module.
func TestGoComments(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	walk(t, func(path string) {
		if !strings.HasSuffix(path, ".go") {
			return
		}
		files++
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", rel(path), err)
			return
		}
		for _, group := range f.Comments {
			var lines []string
			first := fset.Position(group.Pos()).Line
			for _, c := range group.List {
				line := fset.Position(c.Pos()).Line
				for i, l := range strings.Split(c.Text, "\n") {
					for len(lines) < line+i-first {
						lines = append(lines, "")
					}
					lines = append(lines, l)
				}
			}
			for i, p := range problems(lines) {
				if p != "" {
					t.Errorf("%s:%d: %s", rel(path), first+i, p)
				}
			}
		}
	})
	if files < 100 {
		t.Fatalf("read %d .go files under %s, want the module's (hundreds)", files, root)
	}
}

// TestScripts reads every line of the shell and SQL files of the module:
// their comments are most of their text.
func TestScripts(t *testing.T) {
	files := 0
	walk(t, func(path string) {
		if ext := filepath.Ext(path); ext != ".sh" && ext != ".sql" {
			return
		}
		files++
		f, err := os.Open(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		var lines []string
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		if err := sc.Err(); err != nil {
			t.Errorf("%s: %v", rel(path), err)
		}
		for i, p := range problems(lines) {
			if p != "" {
				t.Errorf("%s:%d: %s", rel(path), i+1, p)
			}
		}
	})
	if files == 0 {
		t.Fatalf("found no .sh or .sql file under %s", root)
	}
}

// walk calls visit with the path of every file of the module, leaving out
// hidden directories (.git), node_modules and vendored files (the Swagger
// UI of the /docs page).
func walk(t *testing.T, visit func(path string)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "docsui") {
				return filepath.SkipDir
			}
			return nil
		}
		visit(path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rel returns path relative to the module root, for messages.
func rel(path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}
