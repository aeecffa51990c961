// Command stmtreplay turns the statements a server ran, as PostgreSQL
// logged them with their values (log_min_duration_statement = 0), into
// pgbench scripts: one per distinct statement, and one per distinct
// sequence of statements a request sent, each with the values of its
// first run written in. scripts/bench-statements.sh runs them, to tell
// what each statement, and each kind of request, costs the database alone.
//
//	stmtreplay -log chunk.log -out DIR -first 'SELECT COALESCE(SUM(v), 0) FROM store_versions'
//
// A request's statements are those from one run of the statement -first
// (the first statement every request sends, the default the server's
// change counter, which its token cache reads) to the next;
// the log must come from a run on one client connection, so that they do
// not interleave. DIR receives stmt-N.sql and seq-N.sql, most frequent
// first, and index.tsv: each file, how often it ran in the log, and what
// it is (the first words of the statement, or the statements of the
// sequence by their stmt-N names).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func main() {
	logFile := flag.String("log", "", "PostgreSQL's log of the run (its lines since the run began)")
	out := flag.String("out", "", "directory for the pgbench scripts and index.tsv")
	first := flag.String("first", "SELECT COALESCE(SUM(v), 0) FROM store_versions", "the statement each request sends first, whole")
	flag.Parse()
	if *logFile == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: stmtreplay -log FILE -out DIR [-first TEXT]")
		os.Exit(2)
	}
	f, err := os.Open(*logFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stmtreplay:", err)
		os.Exit(1)
	}
	defer f.Close()
	runs, err := parseLog(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stmtreplay:", err)
		os.Exit(1)
	}
	stmts, seqs := group(runs, *first)
	if err := write(*out, stmts, seqs); err != nil {
		fmt.Fprintln(os.Stderr, "stmtreplay:", err)
		os.Exit(1)
	}
}

// run is one execution of a statement: its text and that text with its
// values written in.
type run struct {
	text, literal string
}

// entryStart matches the first line of a log entry (Debian's
// log_line_prefix, '%m [%p] %q%u@%d '): its time, then its level and
// message.
var entryStart = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[.\d]* \S+ \[\d+\] .*?(LOG|DETAIL|ERROR|STATEMENT|WARNING|FATAL):  (.*)$`)

// executeMessage matches a logged execution of a prepared or unnamed
// statement.
var executeMessage = regexp.MustCompile(`(?s)^duration: [\d.]+ ms  execute [^:]+: (.*)$`)

// parseLog returns the executions the log holds, in order, with the
// values of their parameters (the DETAIL entry that follows each) written
// in.
func parseLog(r io.Reader) ([]run, error) {
	var entries [][2]string // level, message with its continuation lines
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := entryStart.FindStringSubmatch(line); m != nil {
			entries = append(entries, [2]string{m[1], m[2]})
		} else if len(entries) > 0 && strings.HasPrefix(line, "\t") {
			entries[len(entries)-1][1] += "\n" + line[1:]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var runs []run
	for i, e := range entries {
		m := executeMessage.FindStringSubmatch(e[1])
		if e[0] != "LOG" || m == nil {
			continue
		}
		r := run{text: m[1], literal: m[1]}
		if i+1 < len(entries) && entries[i+1][0] == "DETAIL" && strings.HasPrefix(entries[i+1][1], "parameters: ") {
			values, err := parameters(strings.TrimPrefix(entries[i+1][1], "parameters: "))
			if err != nil {
				return nil, fmt.Errorf("statement %.60q: %w", m[1], err)
			}
			r.literal = substitute(r.text, values)
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// parameters parses PostgreSQL's list of a statement's values,
// "$1 = 'a', $2 = NULL, ...", into SQL literals by number.
func parameters(s string) (map[int]string, error) {
	values := map[int]string{}
	for s != "" {
		var n int
		if _, err := fmt.Sscanf(s, "$%d = ", &n); err != nil {
			return nil, fmt.Errorf("parameters at %.30q: %w", s, err)
		}
		s = s[strings.Index(s, " = ")+3:]
		switch {
		case strings.HasPrefix(s, "NULL"):
			values[n], s = "NULL", s[len("NULL"):]
		case strings.HasPrefix(s, "'"):
			end := 1
			for {
				q := strings.IndexByte(s[end:], '\'')
				if q < 0 {
					return nil, fmt.Errorf("parameter $%d: unterminated value", n)
				}
				end += q + 1
				if end < len(s) && s[end] == '\'' { // a quote doubled inside the value
					end++
					continue
				}
				break
			}
			values[n], s = s[:end], s[end:]
		default:
			return nil, fmt.Errorf("parameter $%d: value %.20q", n, s)
		}
		s = strings.TrimPrefix(s, ", ")
	}
	return values, nil
}

// placeholder matches a statement's $n.
var placeholder = regexp.MustCompile(`\$(\d+)`)

// substitute writes values in place of text's placeholders.
func substitute(text string, values map[int]string) string {
	return placeholder.ReplaceAllStringFunc(text, func(p string) string {
		n, _ := strconv.Atoi(p[1:])
		if v, ok := values[n]; ok {
			return v
		}
		return p
	})
}

// replay is a pgbench script: the literal statements of its first run,
// how often it ran and what it is.
type replay struct {
	name, about string
	statements  []string
	count       int
}

// group returns the distinct statements of runs and the distinct
// sequences of statements from one run of the statement first to the
// next, each most frequent first.
func group(runs []run, first string) (stmts, seqs []*replay) {
	byText := map[string]*replay{}
	for _, r := range runs {
		s := byText[r.text]
		if s == nil {
			s = &replay{statements: []string{r.literal}, about: strings.Join(strings.Fields(r.text), " ")}
			byText[r.text] = s
			stmts = append(stmts, s)
		}
		s.count++
	}
	sortReplays(stmts)
	for i, s := range stmts {
		s.name = fmt.Sprintf("stmt-%d", i+1)
		if len(s.about) > 100 {
			s.about = s.about[:100] + "..."
		}
	}
	bySeq := map[string]*replay{}
	var cur []run
	flush := func() {
		if len(cur) == 0 {
			return
		}
		var names, literals []string
		for _, r := range cur {
			names = append(names, byText[r.text].name)
			literals = append(literals, r.literal)
		}
		key := strings.Join(names, " ")
		s := bySeq[key]
		if s == nil {
			s = &replay{statements: literals, about: key}
			bySeq[key] = s
			seqs = append(seqs, s)
		}
		s.count++
		cur = nil
	}
	for _, r := range runs {
		if r.text == first {
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	sortReplays(seqs)
	for i, s := range seqs {
		s.name = fmt.Sprintf("seq-%d", i+1)
	}
	return stmts, seqs
}

// sortReplays orders rs most frequent first, in the log's order among
// equals.
func sortReplays(rs []*replay) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].count > rs[j].count })
}

// write writes each replay's script to dir, and index.tsv.
func write(dir string, stmts, seqs []*replay) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var index strings.Builder
	for _, r := range append(stmts, seqs...) {
		script := strings.Join(r.statements, ";\n") + ";\n"
		if err := os.WriteFile(filepath.Join(dir, r.name+".sql"), []byte(script), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&index, "%s\t%d\t%s\n", r.name, r.count, r.about)
	}
	return os.WriteFile(filepath.Join(dir, "index.tsv"), []byte(index.String()), 0o644)
}
