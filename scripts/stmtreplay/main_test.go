package main

import (
	"maps"
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
	wantParams := map[int]string{1: "'it''s, here'", 2: "'17'", 12: "NULL"}
	if !maps.Equal(runs[1].values, wantParams) {
		t.Errorf("values %v, want %v", runs[1].values, wantParams)
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
	// Each transaction picks one run's values; the parameter that was
	// NULL keeps its first run's value in the text.
	wantSeq := `\set r random(0, 1)
SELECT p2_1, p2_2 FROM stmtreplay.seq_1 WHERE r = :r \gset
SELECT COALESCE(SUM(v), 0) FROM store_versions;
SELECT id FROM events WHERE project = :p2_1
	AND created_at < :p2_2 AND x = NULL;
`
	if string(seq) != wantSeq {
		t.Errorf("seq-1.sql:\n%s\nwant\n%s", seq, wantSeq)
	}
	values, err := os.ReadFile(filepath.Join(dir, "seq-1.values.sql"))
	if err != nil {
		t.Fatal(err)
	}
	wantValues := "CREATE TABLE stmtreplay.seq_1 (r int PRIMARY KEY, p2_1 text, p2_2 text);\n" +
		"INSERT INTO stmtreplay.seq_1 VALUES (0, 'it''s, here', '17'), (1, 'other', '18');\n"
	if string(values) != wantValues {
		t.Errorf("seq-1.values.sql:\n%s\nwant\n%s", values, wantValues)
	}
	stmt, err := os.ReadFile(filepath.Join(dir, "stmt-1.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "SELECT COALESCE(SUM(v), 0) FROM store_versions;\n"; string(stmt) != want {
		t.Errorf("stmt-1.sql, a statement without values:\n%s\nwant\n%s", stmt, want)
	}
}

func TestParametersRejectsWhatItCannotRead(t *testing.T) {
	for _, s := range []string{"$1 = 'open", "$1 = 12", "1 = '2'"} {
		if _, err := parameters(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}
