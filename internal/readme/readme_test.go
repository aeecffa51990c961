// Package readme_test keeps the documentation true: every ```go block of
// README.md and docs/*.md is compiled, against the module as it is, by go
// build; and every relative link and #anchor of README.md, BENCHMARKS.md
// and docs/*.md points at a file and a heading that exist.
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

// root is the module's directory, relative to this package.
var root = filepath.Join("..", "..")

// docPages returns the Markdown pages checked by these tests, relative to
// the module root: README.md and BENCHMARKS.md, then docs/*.md.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md", "BENCHMARKS.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("found no docs/*.md")
	}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, filepath.ToSlash(rel))
	}
	return pages
}

// readPage returns the text of a page given relative to the module root.
func readPage(t *testing.T, page string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

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
	"note":       "golang.org/x/mod/sumdb/note",
	"os":         "os",
	"strings":    "strings",
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

// lineComment matches a // comment (not the // of a URL in a string), so
// that a package named only in a comment is not imported.
var lineComment = regexp.MustCompile(`(?m)(^|\s)//.*$`)

// topLevel matches a snippet made of declarations rather than statements.
var topLevel = regexp.MustCompile(`(?m)^func `)

// goBlock matches a ```go fenced block.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestGoSnippetsCompile wraps each Go snippet of README.md and docs/*.md
// in a function of its own (its free variables as parameters, the imports
// it names) and builds each page's snippets as one package through an
// overlay, so no file is written into the module.
func TestGoSnippetsCompile(t *testing.T) {
	dir := t.TempDir()
	replace := map[string]string{}
	var pkgs []string
	blocks := 0
	for _, page := range docPages(t) {
		src, n := snippetProgram(page, readPage(t, page))
		if n == 0 {
			continue
		}
		blocks += n
		name := "p" + regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(page), "_")
		file := filepath.Join(dir, name+".go")
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		target, err := filepath.Abs(filepath.Join("snippets", name, "main.go"))
		if err != nil {
			t.Fatal(err)
		}
		replace[target] = file
		pkgs = append(pkgs, "./snippets/"+name)
	}
	// The README shows the library; docs/embedding.md has the embedding,
	// caching, remote, client, metrics and webhooks snippets.
	if blocks < 8 {
		t.Fatalf("found %d Go blocks in README.md and docs/*.md, want the README's and docs/embedding.md's at least", blocks)
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	// With several main packages, go build compiles them and discards the
	// results.
	args := append([]string{"build", "-overlay", overlayFile}, pkgs...)
	cmd := exec.CommandContext(context.Background(), "go", args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		var programs strings.Builder
		for target, file := range replace {
			b, _ := os.ReadFile(file)
			fmt.Fprintf(&programs, "\n%s:\n%s\n", filepath.Base(filepath.Dir(target)), numbered(string(b)))
		}
		t.Fatalf("the Go snippets of the docs do not compile: %v\n%s\nthe programs built from them:%s", err, out, programs.String())
	}
}

// snippetProgram returns a main package made of the Go blocks of page
// (text), and how many blocks it holds.
func snippetProgram(page, text string) (string, int) {
	blocks := goBlock.FindAllStringSubmatch(text, -1)
	if len(blocks) == 0 {
		return "", 0
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
		uncommented := lineComment.ReplaceAllString(code, "")
		for name := range imports {
			if strings.Contains(uncommented, name+".") {
				used[name] = true
			}
		}
		if topLevel.MatchString(code) {
			// Declarations (a test function, say) stand as they are.
			fmt.Fprintf(&body, "// Go block %d of %s.\n%s\n", i+1, page, code)
			continue
		}
		fmt.Fprintf(&body, "// snippet%d is Go block %d of %s.\nfunc snippet%d(%s) error {\n%s\treturn nil\n}\n\n",
			i, i+1, page, i, strings.Join(params, ", "), code)
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
	src.WriteString(")\n\n// Keep the imports every program has in use.\nvar _ context.Context\nvar _ flagadmin.Store\n\nfunc main() {}\n\n")
	src.WriteString(body.String())
	return src.String(), len(blocks)
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

// TestLinksResolve checks every link of the pages that is not to another
// site: the file or directory it names exists, and its #anchor is a heading
// (or an explicit anchor) of the Markdown page it points to, as GitHub
// renders it.
func TestLinksResolve(t *testing.T) {
	anchorsOf := map[string]map[string]bool{}
	anchors := func(page string) map[string]bool {
		if a, ok := anchorsOf[page]; ok {
			return a
		}
		a := pageAnchors(readPage(t, page))
		anchorsOf[page] = a
		return a
	}
	checked := 0
	for _, page := range docPages(t) {
		for _, l := range pageLinks(readPage(t, page)) {
			checked++
			if err := checkLink(page, l, anchors); err != nil {
				t.Errorf("%s:%d: link %q: %v", page, l.line, l.target, err)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d links in all, want the pages' tables of contents at least", checked)
	}
}

// checkLink resolves the link l of page (relative to the module root).
func checkLink(page string, l link, anchors func(page string) map[string]bool) error {
	path, anchor, _ := strings.Cut(l.target, "#")
	target := page
	if path != "" {
		if strings.HasPrefix(path, "/") {
			return fmt.Errorf("is absolute; write it relative to %s", page)
		}
		target = filepath.ToSlash(filepath.Join(filepath.Dir(page), filepath.FromSlash(path)))
		if strings.HasPrefix(target, "../") {
			return fmt.Errorf("leaves the repository")
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
			return fmt.Errorf("%s does not exist", target)
		}
	}
	if anchor == "" {
		return nil
	}
	if !strings.HasSuffix(target, ".md") {
		return fmt.Errorf("has an anchor, but %s is not a Markdown page", target)
	}
	if !anchors(target)[anchor] {
		return fmt.Errorf("%s has no heading or anchor #%s", target, anchor)
	}
	return nil
}

// link is a link of a page: its target as written and its line.
type link struct {
	target string
	line   int
}

// inlineLink matches a Markdown inline link or image, [text](target) with
// an optional title; text may hold one level of brackets.
var inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]*)>?(?:\s+"[^"]*")?\s*\)`)

// external matches a target on another site (or another kind of URL).
var external = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// pageLinks returns the links of a Markdown page that are not to another
// site, leaving out code blocks and code spans.
func pageLinks(text string) []link {
	var out []link
	for i, line := range proseLines(text) {
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			if m[1] == "" || external.MatchString(m[1]) {
				continue
			}
			out = append(out, link{target: m[1], line: i + 1})
		}
	}
	return out
}

// proseLines returns the lines of a Markdown page with the lines of fenced
// code blocks blanked, so that line numbers stay those of the page.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
			lines[i] = ""
		case strings.HasPrefix(trimmed, "```"), strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			lines[i] = ""
		}
	}
	return lines
}

// codeSpan matches an inline code span.
var codeSpan = regexp.MustCompile("`[^`]*`")

// heading matches an ATX heading and captures its text.
var heading = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)

// explicitAnchor matches an HTML anchor such as <a id="name"></a>.
var explicitAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)

// pageAnchors returns the anchors of a page: the slug of each heading, as
// GitHub makes them (a repeated slug gets -1, -2, …), and explicit
// <a id> or <a name> anchors.
func pageAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(text) {
		for _, m := range explicitAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := headingSlug(m[1])
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// Markdown of a heading that GitHub renders away before making its slug.
var (
	linkText    = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)`)
	htmlTag     = regexp.MustCompile(`<[^>]+>`)
	emphasis    = regexp.MustCompile(`\*+`)
	notSlugChar = regexp.MustCompile(`[^\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}\- ]`)
)

// headingSlug returns the anchor GitHub gives a heading: the rendered text
// (code spans as their text, links as their text, no tags or emphasis
// markers), lower-cased, without the characters that are not letters,
// marks, decimal or letter numbers, connector punctuation (_), hyphens or
// spaces, each space then a hyphen.
func headingSlug(text string) string {
	text = linkText.ReplaceAllString(text, "$1")
	text = strings.ReplaceAll(text, "`", "")
	text = htmlTag.ReplaceAllString(text, "")
	text = emphasis.ReplaceAllString(text, "")
	text = strings.ToLower(strings.TrimSpace(text))
	text = notSlugChar.ReplaceAllString(text, "")
	return strings.ReplaceAll(text, " ", "-")
}

// TestHeadingSlug holds headingSlug to anchors GitHub gives.
func TestHeadingSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Quick start", "quick-start"},
		{"Running against PostgreSQL or MySQL", "running-against-postgresql-or-mysql"},
		{"`flagadmin serve`", "flagadmin-serve"},
		{"`flagadmin service-account` and `flagadmin user`", "flagadmin-service-account-and-flagadmin-user"},
		{"Unleash's variables", "unleashs-variables"},
		{"A request's path", "a-requests-path"},
		{"2026-11-24: settled ids, the `event_order` lock", "2026-11-24-settled-ids-the-event_order-lock"},
		{"2026-11-24 03:20–03:41 UTC: tuning, under load", "2026-11-24-03200341-utc-tuning-under-load"},
		{"Before/after the restructure", "beforeafter-the-restructure"},
		{"Search / varied workload", "search--varied-workload"},
		{"**Bold** and [a link](x.md)", "bold-and-a-link"},
		{"Café ½ Ⅻ", "café--ⅻ"},
	} {
		if got := headingSlug(c.heading); got != c.want {
			t.Errorf("headingSlug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

// TestPageAnchorsRepeatedHeadings checks the numbering of repeated
// headings and that headings inside code blocks are not anchors.
func TestPageAnchorsRepeatedHeadings(t *testing.T) {
	got := pageAnchors("# Notes\n\n## Notes\n\n```sh\n# not a heading\n```\n\n## Notes\n<a id=\"custom\"></a>\n")
	want := map[string]bool{"notes": true, "notes-1": true, "notes-2": true, "custom": true}
	if len(got) != len(want) {
		t.Errorf("got anchors %v, want %v", got, want)
	}
	for a := range want {
		if !got[a] {
			t.Errorf("anchor %q missing from %v", a, got)
		}
	}
}

// TestCheckLinkRefusesBrokenLinks checks that a missing file, a missing
// anchor and an anchor into a file that is no page are each reported.
func TestCheckLinkRefusesBrokenLinks(t *testing.T) {
	anchors := func(page string) map[string]bool {
		return map[string]bool{"quick-start": true}
	}
	for _, c := range []struct {
		target string
		ok     bool
	}{
		{"#quick-start", true},
		{"#live-stream", false},
		{"docs/api.md", true},
		{"docs/no-such-page.md", false},
		{"docs/docs-page.png", true},
		{"docs/docs-page.png#x", false},
		{"/README.md", false},
		{"../outside.md", false},
	} {
		err := checkLink("README.md", link{target: c.target, line: 1}, anchors)
		if (err == nil) != c.ok {
			t.Errorf("checkLink(%q) = %v, want ok %v", c.target, err, c.ok)
		}
	}
}

// workItems matches words that name how the project was worked on rather
// than the product: issue numbers, the private specification's files and
// sections, sessions.
var workItems = regexp.MustCompile(`(?i)\bissues? \d|admin-api\.md|decisions\.md|decisions §|\b(this|that|first|second|previous|earlier|last) session\b`)

// TestPagesSpeakOfTheProduct keeps work items out of the pages: a reader
// has none of them.
func TestPagesSpeakOfTheProduct(t *testing.T) {
	for _, page := range docPages(t) {
		for i, line := range strings.Split(readPage(t, page), "\n") {
			if m := workItems.FindString(line); m != "" {
				t.Errorf("%s:%d: %q names a work item, not the product: state the rule itself", page, i+1, m)
			}
		}
	}
}
