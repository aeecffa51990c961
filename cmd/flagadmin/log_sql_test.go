package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// The verifiable log on the SQL stores: "flagadmin log verify", reading
// the database (--db) and a server over it (--url), names the event that
// was changed, removed, inserted or reordered by SQL, and catches an
// older copy of the database put back with a checkpoint saved before.

// sqlEngines are the databases of these tests; PostgreSQL and MySQL skip
// without a server (internal/dbtest).
var sqlEngines = []struct {
	name string
	url  func(testing.TB) string
}{{"SQLite", dbtest.SQLite}, {"Postgres", dbtest.Postgres}, {"MySQL", dbtest.MySQL}}

// execSQL runs statements on db.
func execSQL(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// awkwardEvent is the i-th of events whose canonical form is not how they
// are written: unicode and escapes, keys out of order, numbers in several
// notations and beyond 2^53, nulls, tags, and no project every third.
func awkwardEvent(i int) flagadmin.Event {
	e := flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "ådå 🚀 \"quoted\"", CreatedByUserID: ptr(int64(i)),
		CreatedAt:   time.Date(2026, 1, 1, 0, i, 0, 123456789, time.UTC),
		FeatureName: ptr(fmt.Sprintf("f-%d", i)), Environment: ptr("production"),
		Data: json.RawMessage(fmt.Sprintf(`{ "z": %d, "a": "h\u00e9llo \ud83d\ude80 ✓", "n": [1.0, 1e2, -0, 12345678901234567890, 1e21, 0.000001],	"nested": {"y": null, "x": true, "é": "\u0001"}, "a": "last wins" }`, i)),
		Tags: []flagadmin.Tag{{Type: "simple", Value: "ünïcode"}, {Type: "simple", Value: fmt.Sprint(i)}}}
	if i%3 != 0 {
		e.Project = ptr("default")
		e.PreData = json.RawMessage(`{"b": 2,   "a": [ ]}`)
	}
	if i%5 == 0 {
		e.Data, e.Tags, e.Environment = nil, nil, nil
	}
	if i == 11 {
		// The largest integer a double holds exactly: one more is the
		// same double.
		e.CreatedByUserID = ptr(int64(1) << 53)
	}
	return e
}

// sqlLogWorld opens a store on dbURL (migrated) with an admin token and
// n awkward events, and returns it with their ids.
func sqlLogWorld(t *testing.T, dbURL string, n int) (*bunstore.Store, []int64) {
	t.Helper()
	ctx := context.Background()
	store, err := bunstore.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := flagadmin.NewService(store).LoadSeed(ctx, strings.NewReader(`{"apiTokens":[{"secret":"`+demoAdmin+`","type":"admin"}]}`)); err != nil {
		t.Fatal(err)
	}
	return store, writeAwkward(t, store, 0, n)
}

// writeAwkward writes the awkward events from to to-1 and returns their ids.
func writeAwkward(t *testing.T, store flagadmin.Store, from, to int) []int64 {
	t.Helper()
	b := &flagadmin.Batch{}
	for i := from; i < to; i++ {
		e := awkwardEvent(i)
		// In the log's normal form, as the Service writes events.
		if _, err := flagadmin.NormalizeEvent(&e, flagadmin.RefuseOutOfRange); err != nil {
			t.Fatal(err)
		}
		b.Events = append(b.Events, e)
	}
	if err := store.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(b.Events))
	for i, e := range b.Events {
		ids[i] = e.ID
	}
	return ids
}

// wantVerify runs log verify with args and checks its exit code and, when
// it fails, the last line of its stderr.
func wantVerify(t *testing.T, how string, want string, args ...string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, nil, append([]string{"log", "verify"}, args...)...)
	if want == "" {
		if code != 0 || !strings.Contains(stdout, "OK: ") {
			t.Errorf("%s: exit %d\nstdout %s\nstderr %s", how, code, stdout, stderr)
		}
		return
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 1 || !strings.Contains(lines[len(lines)-1], want) {
		t.Errorf("%s: exit %d, last line of stderr %q; want 1 and %q\nstdout %s", how, code, lines[len(lines)-1], want, stdout)
	}
}

func TestLogVerifyOnSQLNamesTheTamperedEvent(t *testing.T) {
	signing, verifier := keyFiles(t)
	for _, engine := range sqlEngines {
		t.Run(engine.name, func(t *testing.T) {
			for _, c := range []struct {
				name   string
				tamper func(ids []int64) []string
				want   func(ids []int64) string
			}{
				{"untouched", func([]int64) []string { return nil }, func([]int64) string { return "" }},
				{"a field changed", func(ids []int64) []string {
					return []string{fmt.Sprintf("UPDATE events SET created_by = 'mallory' WHERE id = %d", ids[16])}
				}, func(ids []int64) string {
					return fmt.Sprintf("event %d (leaf 16) was changed: its content differs from what its leaf recorded when it was written", ids[16])
				}},
				{"data changed, the same JSON otherwise written", func(ids []int64) []string {
					return []string{fmt.Sprintf(`UPDATE events SET data = '{"z": 7}' WHERE id = %d`, ids[7])}
				}, func(ids []int64) string { return fmt.Sprintf("event %d (leaf 7) was changed", ids[7]) }},
				// Values a reader that parses JSON leniently takes for the
				// ones written: the API shows them, so they must not verify.
				{"a user id one past what a double holds", func(ids []int64) []string {
					return []string{fmt.Sprintf("UPDATE events SET created_by_user_id = 9007199254740993 WHERE id = %d", ids[11])}
				}, func(ids []int64) string { return fmt.Sprintf("event %d (leaf 11) was changed", ids[11]) }},
				{"a repeated name that the written one overrides", func(ids []int64) []string {
					return []string{fmt.Sprintf(`UPDATE events SET data = CONCAT('{"z":999,', SUBSTR(data, 2)) WHERE id = %d`, ids[2])}
				}, func(ids []int64) string { return fmt.Sprintf("event %d (leaf 2) was changed", ids[2]) }},
				{"null written as a number beyond a double", func(ids []int64) []string {
					return []string{fmt.Sprintf(`UPDATE events SET data = REPLACE(data, 'null', '1e400') WHERE id = %d`, ids[4])}
				}, func(ids []int64) string { return fmt.Sprintf("event %d (leaf 4) was changed", ids[4]) }},
				{"one deleted", func(ids []int64) []string {
					return []string{fmt.Sprintf("DELETE FROM events WHERE id = %d", ids[29])}
				}, func(ids []int64) string {
					return fmt.Sprintf("event %d (leaf 29) was removed: no recorded pruning pass removed it", ids[29])
				}},
				{"one deleted, its leaf marked pruned", func(ids []int64) []string {
					return []string{fmt.Sprintf("DELETE FROM events WHERE id = %d", ids[29]),
						fmt.Sprintf("UPDATE log_leaves SET pruned = TRUE WHERE event_id = %d", ids[29])}
				}, func(ids []int64) string {
					return fmt.Sprintf("event %d (leaf 29) was removed: no recorded pruning pass removed it", ids[29])
				}},
				{"one deleted, its tombstone made old and marked pruned", func(ids []int64) []string {
					return []string{fmt.Sprintf("DELETE FROM events WHERE id = %d", ids[29]),
						fmt.Sprintf("UPDATE log_leaves SET pruned = TRUE, created_at = 0 WHERE event_id = %d", ids[29])}
				}, func(ids []int64) string {
					return fmt.Sprintf("event %d (leaf 29) was removed: its leaf's recorded fields do not hash to its leaf hash", ids[29])
				}},
				{"one inserted", func(ids []int64) []string {
					return []string{fmt.Sprintf(`INSERT INTO events (id, created_at, type, created_by, search_payload, search_meta, salt)
						SELECT %d, 1767225600000, 'feature-updated', 'mallory', '', '', salt FROM events WHERE id = %d`, ids[len(ids)-1]+1, ids[0])}
				}, func(ids []int64) string {
					return fmt.Sprintf("event %d was inserted: it has no leaf in the log", ids[len(ids)-1]+1)
				}},
				{"two ids swapped", func(ids []int64) []string {
					return []string{
						fmt.Sprintf("UPDATE events SET id = %d WHERE id = %d", -1, ids[4]),
						fmt.Sprintf("UPDATE events SET id = %d WHERE id = %d", ids[4], ids[8]),
						fmt.Sprintf("UPDATE events SET id = %d WHERE id = %d", ids[8], -1),
					}
				}, func(ids []int64) string {
					return fmt.Sprintf("event %d (leaf 4) was reordered: it holds what was recorded as event %d", ids[4], ids[8])
				}},
			} {
				t.Run(c.name, func(t *testing.T) {
					dbURL := engine.url(t)
					store, ids := sqlLogWorld(t, dbURL, 50)
					base := logServer(t, store, signing, nil) // signs the checkpoint of the 50 events
					execSQL(t, dbtest.Raw(t, dbURL), c.tamper(ids)...)
					want := c.want(ids)
					wantVerify(t, "--db", want, "--db", dbURL, "--key", verifier)
					wantVerify(t, "--url", want, "--url", base, "--token", demoAdmin, "--key", verifier)
				})
			}
		})
	}
}

func TestLogVerifyOnSQLCatchesAnOlderCopy(t *testing.T) {
	signing, verifier := keyFiles(t)
	for _, engine := range sqlEngines {
		t.Run(engine.name, func(t *testing.T) {
			dbURL := engine.url(t)
			store, ids := sqlLogWorld(t, dbURL, 30)
			logServer(t, store, signing, nil) // the checkpoint of 30 events: in the copy
			writeAwkward(t, store, 30, 40)
			base := logServer(t, store, signing, nil) // the checkpoint of 40
			saved := filepath.Join(t.TempDir(), "checkpoint")
			wantVerify(t, "the live database", "", "--db", dbURL, "--key", verifier, "--save", saved)
			// The copy of the database taken at 30 events put back (its
			// rows, as they were then), and written to since.
			execSQL(t, dbtest.Raw(t, dbURL),
				fmt.Sprintf("DELETE FROM events WHERE id > %d", ids[29]),
				"DELETE FROM log_leaves WHERE idx >= 30",
				"DELETE FROM log_checkpoints WHERE size > 30")
			writeAwkward(t, store, 100, 115)
			logServer(t, store, signing, nil) // a checkpoint of 45, consistent with the copy's 30
			want := "the first 40 events no longer hash to the root of the trusted checkpoint"
			wantVerify(t, "--db", want, "--db", dbURL, "--key", verifier, "--trusted", saved)
			wantVerify(t, "--url", want, "--url", base, "--token", demoAdmin, "--key", verifier, "--trusted", saved)
			// On its own, the copy is a consistent log.
			wantVerify(t, "the copy on its own", "", "--db", dbURL, "--key", verifier)
		})
	}
}

// TestServersWithDifferentRetentionsPruneByTheRecordedRule: three
// servers on one database, started one after the other: without
// --retention, with 90 days, then with 30 (an operator changing the rule,
// one server at a time). Each records its rule at start when it is new;
// the pruners of the first two, started under an older rule, prune by
// the rule the log records last, and the log verifies.
func TestServersWithDifferentRetentionsPruneByTheRecordedRule(t *testing.T) {
	signing, verifier := keyFiles(t)
	const day = 24 * time.Hour
	for _, engine := range sqlEngines {
		t.Run(engine.name, func(t *testing.T) {
			dbURL := engine.url(t)
			store, _ := sqlLogWorld(t, dbURL, 0)
			quiet := slog.New(slog.DiscardHandler)
			var pruners []*tlog.Pruner
			var servers []*bunstore.Store
			for _, rule := range []time.Duration{0, 90 * day, 30 * day} {
				opened, err := bunstore.Open(context.Background(), dbURL)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { opened.Close() })
				servers = append(servers, opened)
				cfg := Config{Retention: rule}
				parts, err := newLogParts(opened, cfg, quiet)
				if err != nil {
					t.Fatal(err)
				}
				if err := recordRetention(parts, rule, quiet); err != nil {
					t.Fatal(err)
				}
				pruners = append(pruners, newPruner(parts, cfg, quiet))
			}
			write := func(ages ...time.Duration) {
				t.Helper()
				b := &flagadmin.Batch{}
				for i, age := range ages {
					b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", CreatedAt: time.Now().Add(-age),
						FeatureName: ptr(fmt.Sprintf("f-%d", i)), Project: ptr("default")})
				}
				if err := store.Write(context.Background(), b); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []struct {
				name   string
				pruner *tlog.Pruner
			}{{"the server started with 90 days", pruners[1]}, {"the server started without --retention", pruners[0]}} {
				// Events older than both rules, older than the last one
				// only, and a young one.
				write(100*day, 100*day, 60*day, 40*day, day)
				if c.pruner == nil {
					t.Fatalf("%s: no pruner", c.name)
				}
				n, err := c.pruner.Pass(context.Background())
				if err != nil || n != 4 {
					t.Errorf("%s: its pruner removed %d events (%v), want the 4 older than the 30 days recorded last", c.name, n, err)
				}
			}
			// Each server has appended the leaves of what it wrote (the
			// records of its passes) before the log is verified: an
			// appender that failed once (a deadlock on MySQL) tries
			// again later.
			for _, server := range servers {
				if _, err := server.LogSize(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			logServer(t, store, signing, nil)
			wantVerify(t, "--db", "", "--db", dbURL, "--key", verifier)
		})
	}
}
