package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// logOfTwoRequests is PostgreSQL's log of two requests of different kinds
// and a third like the first, with a statement over two lines, a value
// holding a quote, a NULL, a statement that holds the first one's text
// (which starts no request), and entries that are not executions.
const logOfTwoRequests = `2026-12-07 00:14:17.700 UTC [9315] postgres@w LOG:  duration: 0.030 ms  bind stmtcache_a: SELECT COALESCE(SUM(v), 0) FROM store_versions
2026-12-07 00:14:17.701 UTC [9315] postgres@w LOG:  duration: 0.018 ms  execute stmtcache_a: SELECT COALESCE(SUM(v), 0) FROM store_versions
2026-12-07 00:14:17.702 UTC [9316] postgres@w LOG:  duration: 0.100 ms  execute stmtcache_b: SELECT id FROM events WHERE project = $1
		AND created_at < $2 AND x = $12
2026-12-07 00:14:17.702 UTC [9316] postgres@w DETAIL:  parameters: $1 = 'it''s, here', $2 = '17', $12 = NULL
2026-12-07 00:14:17.703 UTC [9315] postgres@w LOG:  duration: 0.018 ms  execute stmtcache_a: SELECT COALESCE(SUM(v), 0) FROM store_versions
2026-12-07 00:14:17.704 UTC [9315] postgres@w LOG:  duration: 0.200 ms  execute <unnamed>: SELECT (SELECT COALESCE(SUM(v), 0) FROM store_versions)
2026-12-07 00:14:17.705 UTC [9315] postgres@w LOG:  checkpoint starting: time
2026-12-07 00:14:17.706 UTC [9315] postgres@w LOG:  duration: 0.018 ms  execute stmtcache_a: SELECT COALESCE(SUM(v), 0) FROM store_versions
2026-12-07 00:14:17.707 UTC [9316] postgres@w LOG:  duration: 0.100 ms  execute stmtcache_b: SELECT id FROM events WHERE project = $1
		AND created_at < $2 AND x = $12
2026-12-07 00:14:17.707 UTC [9316] postgres@w DETAIL:  parameters: $1 = 'other', $2 = '18', $12 = '3'
`

func TestReplaysOfALog(t *testing.T) {
	runs, err := parseLog(strings.NewReader(logOfTwoRequests))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 6 {
		t.Fatalf("%d executions, want 6 (binds and other entries left out): %+v", len(runs), runs)
	}
	want := "SELECT id FROM events WHERE project = 'it''s, here'\n\tAND created_at < '17' AND x = NULL"
	if runs[1].literal != want {
		t.Errorf("values written in:\n%s\nwant\n%s", runs[1].literal, want)
	}
	dir := t.TempDir()
	stmts, seqs := group(runs, "SELECT COALESCE(SUM(v), 0) FROM store_versions")
	if err := write(dir, stmts, seqs); err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(dir, "index.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	wantIndex := "stmt-1\t3\tSELECT COALESCE(SUM(v), 0) FROM store_versions\n" +
		"stmt-2\t2\tSELECT id FROM events WHERE project = $1 AND created_at < $2 AND x = $12\n" +
		"stmt-3\t1\tSELECT (SELECT COALESCE(SUM(v), 0) FROM store_versions)\n" +
		"seq-1\t2\tstmt-1 stmt-2\n" +
		"seq-2\t1\tstmt-1 stmt-3\n"
	if string(index) != wantIndex {
		t.Errorf("index.tsv:\n%s\nwant\n%s", index, wantIndex)
	}
	seq, err := os.ReadFile(filepath.Join(dir, "seq-1.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if wantSeq := "SELECT COALESCE(SUM(v), 0) FROM store_versions;\n" + want + ";\n"; string(seq) != wantSeq {
		t.Errorf("seq-1.sql (the first run's values):\n%s\nwant\n%s", seq, wantSeq)
	}
}

func TestParametersRejectsWhatItCannotRead(t *testing.T) {
	for _, s := range []string{"$1 = 'open", "$1 = 12", "1 = '2'"} {
		if _, err := parameters(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}
