// Command stmtreplay turns the statements a server ran, as PostgreSQL
// logged them with their values (log_min_duration_statement = 0), into
// pgbench scripts: one per distinct statement, and one per distinct
// sequence of statements a request sent. Each transaction of a script
// first picks the values of one of the logged runs (up to 100, spread
// over the log) from a table of them into pgbench variables, then sends
// the statements with those values as parameters, kept prepared (pgbench
// -M prepared), as the server sent them. scripts/bench-statements.sh runs
// them, to tell what each statement, and each kind of request, costs the
// database alone.
//
//	stmtreplay -log chunk.log -out DIR -first 'SELECT COALESCE(SUM(v), 0) FROM store_versions'
//
// A request's statements are those from one run of the statement -first
// (the first statement every request sends, the default the server's
// change counter, which its token cache reads) to the next;
// the log must come from a run on one client connection, so that they do
// not interleave. DIR receives stmt-N.sql and seq-N.sql, most frequent
// first, each with N.values.sql, the statements that make the table of
// its values in the schema stmtreplay (which must exist first), and
// index.tsv: each file, how often it ran in the log, and what
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
	"slices"
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

// run is one execution of a statement: its text and its values.
type run struct {
	text   string
	values map[int]string // SQL literals by parameter number
}

// entryStart matches the first line of a log entry (Debian's
// log_line_prefix, '%m [%p] %q%u@%d '): its time, then its level and
// message.
var entryStart = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[.\d]* \S+ \[\d+\] .*?(LOG|DETAIL|ERROR|STATEMENT|WARNING|FATAL):  (.*)$`)

// executeMessage matches a logged execution of a prepared or unnamed
// statement.
var executeMessage = regexp.MustCompile(`(?s)^duration: [\d.]+ ms  execute [^:]+: (.*)$`)

// parseLog returns the executions the log holds, in order, with the
// values of their parameters (the DETAIL entry that follows each).
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
		r := run{text: m[1]}
		if i+1 < len(entries) && entries[i+1][0] == "DETAIL" && strings.HasPrefix(entries[i+1][1], "parameters: ") {
			values, err := parameters(strings.TrimPrefix(entries[i+1][1], "parameters: "))
			if err != nil {
				return nil, fmt.Errorf("statement %.60q: %w", m[1], err)
			}
			r.values = values
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

// replay is a pgbench script: the runs of its statements (one a
// transaction; how often they ran) and what it is.
type replay struct {
	name, about string
	runs        [][]run
}

// group returns the distinct statements of runs and the distinct
// sequences of statements from one run of the statement first to the
// next, each most frequent first.
func group(runs []run, first string) (stmts, seqs []*replay) {
	byText := map[string]*replay{}
	for _, r := range runs {
		s := byText[r.text]
		if s == nil {
			s = &replay{about: strings.Join(strings.Fields(r.text), " ")}
			byText[r.text] = s
			stmts = append(stmts, s)
		}
		s.runs = append(s.runs, []run{r})
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
		var names []string
		for _, r := range cur {
			names = append(names, byText[r.text].name)
		}
		key := strings.Join(names, " ")
		s := bySeq[key]
		if s == nil {
			s = &replay{about: key}
			bySeq[key] = s
			seqs = append(seqs, s)
		}
		s.runs = append(s.runs, cur)
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
	sort.SliceStable(rs, func(i, j int) bool { return len(rs[i].runs) > len(rs[j].runs) })
}

// maxSamples bounds the logged runs whose values a script picks from.
const maxSamples = 100

// valuesSchema is the schema of the tables of values the scripts read,
// which must exist before values' statements run.
const valuesSchema = "stmtreplay"

// script is the pgbench script of r: a pick of one of up to maxSamples
// of its runs (spread over them) into variables p<statement>_<parameter>,
// then its statements with those variables as parameters; and values,
// the statements that make the table of those runs' values the pick
// reads (empty when the statements have none). A parameter that is NULL
// in any of them is written in as its first run's value (pgbench sets no
// variable from a NULL).
func (r *replay) script() (script, values string) {
	samples := make([][]run, 0, maxSamples)
	for i := range min(len(r.runs), maxSamples) {
		samples = append(samples, r.runs[i*len(r.runs)/min(len(r.runs), maxSamples)])
	}
	first := samples[0]
	var cols []string  // p<statement>_<parameter>
	var colAt [][2]int // each column's statement index and parameter
	var out strings.Builder
	var stmts []string
	for si, st := range first {
		nullable := map[int]bool{}
		for _, sample := range samples {
			for n, v := range sample[si].values {
				nullable[n] = nullable[n] || v == "NULL"
			}
		}
		stmts = append(stmts, placeholder.ReplaceAllStringFunc(st.text, func(p string) string {
			n, _ := strconv.Atoi(p[1:])
			v, ok := st.values[n]
			if !ok || nullable[n] {
				if ok {
					return v
				}
				return p
			}
			name := fmt.Sprintf("p%d_%d", si+1, n)
			if !slices.Contains(cols, name) {
				cols, colAt = append(cols, name), append(colAt, [2]int{si, n})
			}
			return ":" + name
		}))
	}
	if len(cols) > 0 {
		// The runs' values are rows of a table of their own (values): a
		// VALUES list or a JSON constant in the script, picked from at
		// each run, cost more than the statements they fed.
		table := valuesSchema + "." + strings.ReplaceAll(r.name, "-", "_")
		colDefs := make([]string, len(cols))
		for j, c := range cols {
			colDefs[j] = c + " text"
		}
		rows := make([]string, len(samples))
		for i, sample := range samples {
			vals := []string{strconv.Itoa(i)}
			for _, at := range colAt {
				vals = append(vals, sample[at[0]].values[at[1]])
			}
			rows[i] = "(" + strings.Join(vals, ", ") + ")"
		}
		values = fmt.Sprintf("CREATE TABLE %s (r int PRIMARY KEY, %s);\nINSERT INTO %s VALUES %s;\n",
			table, strings.Join(colDefs, ", "), table, strings.Join(rows, ", "))
		fmt.Fprintf(&out, "\\set r random(0, %d)\n", len(samples)-1)
		fmt.Fprintf(&out, "SELECT %s FROM %s WHERE r = :r \\gset\n", strings.Join(cols, ", "), table)
	}
	for _, st := range stmts {
		out.WriteString(st + ";\n")
	}
	return out.String(), values
}

// write writes each replay's script to dir, and index.tsv.
func write(dir string, stmts, seqs []*replay) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var index strings.Builder
	for _, r := range append(stmts, seqs...) {
		script, values := r.script()
		if err := os.WriteFile(filepath.Join(dir, r.name+".sql"), []byte(script), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, r.name+".values.sql"), []byte(values), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&index, "%s\t%d\t%s\n", r.name, len(r.runs), r.about)
	}
	return os.WriteFile(filepath.Join(dir, "index.tsv"), []byte(index.String()), 0o644)
}
