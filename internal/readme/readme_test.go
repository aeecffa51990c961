// Package readme_test keeps the Go snippets of README.md true: every
// ```go block is compiled, against the module as it is, by go build.
package readme_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// imports are the packages a snippet may use, by the name it uses them
// with. A snippet gets the imports whose names it mentions.
var imports = map[string]string{
	"bunstore":   "github.com/flagadmin/flagadmin/adapters/bunstore",
	"client":     "github.com/flagadmin/flagadmin/adapters/client",
	"httpapi":    "github.com/flagadmin/flagadmin/adapters/httpapi",
	"memstore":   "github.com/flagadmin/flagadmin/adapters/memstore",
	"storecache": "github.com/flagadmin/flagadmin/adapters/storecache",
	"webhooks":   "github.com/flagadmin/flagadmin/adapters/webhooks",
	"metrics":    "github.com/flagadmin/flagadmin/adapters/metrics",
	"flagadmin":  "github.com/flagadmin/flagadmin/flagadmin",
	"context":    "context",
	"errors":     "errors",
	"fmt":        "fmt",
	"http":       "net/http",
	"os":         "os",
	"testing":    "testing",
	"slog":       "log/slog",
	"time":       "time",
}

// freeVars are the variables a snippet may use without declaring them, as
// the program around it would have them.
var freeVars = []struct{ name, typ string }{
	{"ctx", "context.Context"},
	{"store", "flagadmin.VersionedStore"},
	{"svc", "*flagadmin.Service"},
	{"serverURL", "string"},
	{"token", "string"},
	{"sqlStore", "*bunstore.Store"},
}

// topLevel matches a snippet made of declarations rather than statements.
var topLevel = regexp.MustCompile(`(?m)^func `)

// goBlock matches a ```go fenced block of the README.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestReadmeGoSnippetsCompile wraps each Go snippet of README.md in a
// function of its own (its free variables as parameters, the imports it
// names) and builds them all as one package through an overlay, so no file
// is written into the module.
func TestReadmeGoSnippetsCompile(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 4 {
		t.Fatalf("found %d Go blocks in README.md, want the embedding, caching, remote and client snippets at least", len(blocks))
	}
	var body strings.Builder
	used := map[string]bool{"context": true, "flagadmin": true}
	for i, b := range blocks {
		code := b[1]
		var params []string
		for _, v := range freeVars {
			if mentions(code, v.name) && !declares(code, v.name) {
				params = append(params, v.name+" "+v.typ)
			}
		}
		for name := range imports {
			if strings.Contains(code, name+".") {
				used[name] = true
			}
		}
		if topLevel.MatchString(code) {
			// Declarations (a test function, say) stand as they are.
			fmt.Fprintf(&body, "// Go block %d of README.md.\n%s\n", i+1, code)
			continue
		}
		fmt.Fprintf(&body, "// snippet%d is Go block %d of README.md.\nfunc snippet%d(%s) error {\n%s\treturn nil\n}\n\n",
			i, i+1, i, strings.Join(params, ", "), code)
	}
	var names []string
	for name := range used {
		names = append(names, name)
	}
	slices.Sort(names)
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for _, name := range names {
		fmt.Fprintf(&src, "\t%q\n", imports[name])
	}
	src.WriteString(")\n\nfunc main() {}\n\n")
	src.WriteString(body.String())

	dir := t.TempDir()
	file := filepath.Join(dir, "main.go")
	if err := os.WriteFile(file, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	target, err := filepath.Abs(filepath.Join("snippets", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {target: file}})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), "go", "build", "-overlay", overlayFile, "-o", os.DevNull, "./snippets")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("README.md's Go snippets do not compile: %v\n%s\nthe program built from them:\n%s", err, out, numbered(src.String()))
	}
}

// mentions reports whether code uses the identifier name.
func mentions(code, name string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(code)
}

// declares reports whether code declares name at its top level with :=
// (alone or first in a list), in which case it is not a free variable.
func declares(code, name string) bool {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s*(,[^=\n]*)?:=`).MatchString(code)
}

// numbered prefixes each line of s with its number, for failure messages.
func numbered(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = fmt.Sprintf("%4d  %s", i+1, lines[i])
	}
	return strings.Join(lines, "\n")
}
