package bunstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/textindex"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// findCounter are summaries that count the free-text pages FindTextPage
// found, and those it left to the window.
type findCounter struct {
	summaries
	found, declined int
}

func (f *findCounter) FindTextPage(ctx context.Context, db bun.IDB, q flagadmin.EventQuery, rest sqlq.Fragment) ([]int64, int, bool, error) {
	ids, total, found, err := f.summaries.FindTextPage(ctx, db, q, rest)
	if found {
		f.found++
	} else {
		f.declined++
	}
	return ids, total, found, err
}

// TestTextPageFromIndexAgreesWithMemstore: on SQLite, a free-text page is
// found from the FTS5 table in id order, and it is memstore's page
// whatever order the events were created in. Written in the order of
// their creation, every page is found from the index; with the newest
// two swapped (a page that holds both sorts them), written newest first,
// or in order but for a few late events dated in the past and a few early
// ones dated ahead, the pages whose check fails are read by the window
// instead (samePages).
func TestTextPageFromIndexAgreesWithMemstore(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	const n = 240 // samePages' offsets reach past the last match
	for _, order := range []struct {
		name  string
		when  func(i int) time.Time
		found bool // every page is found from the index
	}{
		{"in creation order", func(i int) time.Time { return at.Add(time.Duration(i) * time.Minute) }, true},
		{"the newest two swapped", func(i int) time.Time {
			if i == n-2 {
				return at.Add(time.Duration(n) * time.Minute)
			}
			return at.Add(time.Duration(i) * time.Minute)
		}, false},
		{"newest first", func(i int) time.Time { return at.Add(time.Duration(n-i) * time.Minute) }, false},
		{"late and early events", func(i int) time.Time {
			switch {
			case i%53 == 7:
				return at.Add(-time.Duration(i) * time.Hour)
			case i%71 == 3:
				return at.Add(time.Duration(n+i) * time.Hour)
			}
			return at.Add(time.Duration(i) * time.Minute)
		}, false},
	} {
		t.Run(order.name, func(t *testing.T) {
			s, err := Open(ctx, dbtest.SQLite(t))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			counter := &findCounter{summaries: s.summaries}
			s.summaries = counter
			mem := memstore.New()
			events := projectEvents(n, order.when)
			for _, st := range []flagadmin.Store{s, mem} {
				if err := st.Write(ctx, &flagadmin.Batch{Events: events}); err != nil {
					t.Fatal(err)
				}
			}
			samePages(t, s, mem, order.name)
			if order.found && counter.declined > 0 || !order.found && counter.declined == 0 || counter.found == 0 {
				t.Errorf("%d pages found from the index, %d read by the window", counter.found, counter.declined)
			}
		})
	}
}

// projectEvents are n events created at when(i), each with "orbit i" in
// its data, every fifth with "comet-5" too, one with the token of a
// project, in projects whose ids differ
// only by case, lists of projects, every project ("*"), or none.
func projectEvents(n int, when func(i int) time.Time) []flagadmin.Event {
	projects := []string{"alpha", "beta", "secret", "Secret", "alpha,secret", "beta,gamma", "*", "secret"}
	var events []flagadmin.Event
	for i := range n {
		note := fmt.Sprintf("orbit %d", i)
		if i%5 == 0 {
			note += " comet-5"
		}
		if i == 17 {
			note += " w2a" // the project token of "*", in a text
		}
		data, _ := json.Marshal(map[string]string{"note": note})
		e := flagadmin.Event{CreatedAt: when(i), Type: flagadmin.EventFeatureUpdated, CreatedBy: "user", Data: data}
		if i%24 != 23 {
			e.Project = &projects[i%8]
		}
		events = append(events, e)
	}
	return events
}

// samePages checks that s answers free-text queries of projectEvents as
// want does, in both scopes: for an admin and for callers who cannot see some projects
// (told apart by case, named in lists of projects, every project's "*")
// or events without one, at offsets up to past the last match.
func samePages(t *testing.T, s *Store, want flagadmin.Store, stage string) {
	t.Helper()
	for _, text := range []string{"orbit", "comet-5", "no-such-text", "w2a"} {
		for _, v := range []struct {
			require bool
			hidden  []string
		}{
			{false, nil}, {true, nil}, {true, []string{"secret", flagadmin.AllProjects}}, {false, []string{"Secret"}},
			{true, []string{"alpha", "gamma", flagadmin.AllProjects}},
		} {
			for _, p := range [][2]int{{0, 50}, {0, 1}, {37, 7}, {190, 50}, {239, 1}, {250, 10}} {
				for _, scope := range []flagadmin.TextScope{flagadmin.TextPayload, flagadmin.TextPayloadTypeCreator} {
					q := flagadmin.EventQuery{Text: text, TextScope: scope, Offset: p[0], Limit: p[1], RequireProject: v.require, HiddenProjects: v.hidden}
					samePage(t, s, want, q, fmt.Sprintf("%s: %q in scope %d requiring a project %v, hiding %q, offset %d limit %d", stage, text, scope, v.require, v.hidden, q.Offset, q.Limit))
				}
			}
		}
	}
}

// samePage checks that s answers q as want does; what tells q in the
// error.
func samePage(t *testing.T, s *Store, want flagadmin.Store, q flagadmin.EventQuery, what string) {
	t.Helper()
	ctx := context.Background()
	w, err := want.SearchEvents(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.SearchEvents(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := PageKey(t, got), PageKey(t, w); g != w {
		t.Errorf("%s:\ngot  %s\nwant %s", what, g, w)
	}
}

// TestSQLiteTextIndexFollowsProjects: the full-text index's project
// tokens follow changes made in the database (an event's project set,
// changed to another, removed), and pages hold an old event made the
// newest; a database whose index had no projects gets them in a migration
// that leaves every event to the backlog: hidden projects are left out as
// the plain store leaves them out, before the backlog fills the index and
// after.
func TestSQLiteTextIndexFollowsProjects(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	url := dbtest.SQLite(t)
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Open(ctx, url, WithoutTuning(TextIndex))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := s.Write(ctx, &flagadmin.Batch{Events: projectEvents(700, func(i int) time.Time { return at.Add(time.Duration(i) * time.Minute) })}); err != nil {
		t.Fatal(err)
	}
	samePages(t, s, plain, "written")
	for _, stmt := range []string{
		"UPDATE events SET project = 'secret' WHERE id % 9 = 0",
		"UPDATE events SET project = 'alpha,secret' WHERE id % 13 = 0",
		"UPDATE events SET project = NULL WHERE id % 7 = 0",
		"UPDATE events SET project = 'beta' WHERE project IS NULL AND id % 2 = 0",
		// An old event made the newest, far below the pages' ids.
		"UPDATE events SET created_at = created_at + 86400000 WHERE id = 20",
	} {
		if _, err := s.db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	samePages(t, s, plain, "changed in the database")
	// The schema before the migration: events_tokens without projects.
	for _, stmt := range []string{
		"DROP TRIGGER events_tokens_delete", "DROP TRIGGER events_tokens_update", "DROP TABLE events_tokens",
		`CREATE VIRTUAL TABLE events_tokens USING fts5(search_payload, search_meta, content='', tokenize="ascii tokenchars '!#$%&''()*+-./;<=>?@\^_` + "`" + `|~'")`,
		"INSERT INTO events_tokens (rowid, search_payload, search_meta) SELECT id, search_payload, search_meta FROM events",
		"DELETE FROM bun_migrations WHERE name = '20261214090000'",
	} {
		if _, err := s.db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, url, WithTextBacklogHeld())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var pending int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM events_text_pending").Scan(&pending); err != nil || pending != 1 {
		t.Fatalf("after the migration: %d pending ranges (%v), want 1", pending, err)
	}
	samePages(t, s, plain, "after the migration")
	for more := true; more; {
		if more, err = FillTextBatch(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	samePages(t, s, plain, "after the backlog")
}

// TestTextPageFromIndexFarFromItsCheck: a page whose check would read more
// of events_created than its bound allows is read by the window, so an
// event dated ahead of the rest, and beyond that bound in time order, is
// on it: 10,000 events in the order of their creation, the query's 101
// matches spread over them, the first of them dated after every other.
func TestTextPageFromIndexFarFromItsCheck(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	s, err := Open(ctx, dbtest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem := memstore.New()
	var events []flagadmin.Event
	for i := range 10000 {
		note, when := fmt.Sprintf("filler %d", i), at.Add(time.Duration(i)*time.Second)
		if i%100 == 0 || i == 3 {
			note += " beacon"
		}
		if i == 3 {
			when = at.Add(24 * time.Hour)
		}
		data, _ := json.Marshal(map[string]string{"note": note})
		events = append(events, flagadmin.Event{CreatedAt: when, Type: flagadmin.EventFeatureUpdated, CreatedBy: "user", Data: data})
	}
	for _, st := range []flagadmin.Store{s, mem} {
		if err := st.Write(ctx, &flagadmin.Batch{Events: events}); err != nil {
			t.Fatal(err)
		}
	}
	samePage(t, s, mem, flagadmin.EventQuery{Text: "beacon", Limit: 50}, "beacon")
}

// pageStatements are summaries that find free-text pages from the index
// (textindex.FindPage) through a query that logs each statement run, its
// text and values.
type pageStatements struct {
	summaries
	query sqlq.Query
	log   []string
}

func (p *pageStatements) FindTextPage(ctx context.Context, db bun.IDB, q flagadmin.EventQuery, rest sqlq.Fragment) ([]int64, int, bool, error) {
	logged := func(ctx context.Context, db bun.IDB, stmt sqlq.Fragment) (*sql.Rows, error) {
		p.log = append(p.log, fmt.Sprint(stmt.Text, stmt.Args))
		return p.query(ctx, db, stmt)
	}
	return textindex.FindPage(ctx, db, logged, q, rest)
}

// TestTextPageOfHiddenMatchesFromIndex: on SQLite, the free-text page of a
// caller who may not see the project that holds nearly all of a term's
// matches is read from the index without that project's events, not by
// reading each match's row, and it is memstore's page: at offsets within
// and past the matches shown, with events in lists of projects and without
// one. A term whose matches that caller mostly sees is still read by rows.
func TestTextPageOfHiddenMatchesFromIndex(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, dbtest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	statements := &pageStatements{summaries: s.summaries, query: s.sqlDialect.QueryPrepared}
	s.summaries = statements
	mem := memstore.New()
	// 3,000 events of "orbit", in creation order; one in 32 in a project
	// other than "secret" (another told apart by case, a list without it,
	// none), one more in 32 in a list with it; every third also "comet".
	projects := []string{"alpha", "beta,gamma", "", "Secret"}
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	var events []flagadmin.Event
	for i := range 3000 {
		note := fmt.Sprintf("orbit %d", i)
		if i%3 == 0 {
			note += " comet"
		}
		data, _ := json.Marshal(map[string]string{"note": note})
		e := flagadmin.Event{CreatedAt: at.Add(time.Duration(i) * time.Second), Type: flagadmin.EventFeatureUpdated, CreatedBy: "user", Data: data}
		switch project := projects[i/32%4]; {
		case i%32 == 0 && project != "":
			e.Project = &project
		case i%32 == 0:
		case i%32 == 16:
			e.Project = new("alpha,secret")
		default:
			e.Project = new("secret")
		}
		events = append(events, e)
	}
	for _, st := range []flagadmin.Store{s, mem} {
		if err := st.Write(ctx, &flagadmin.Batch{Events: events}); err != nil {
			t.Fatal(err)
		}
	}
	fromIndex := func() bool {
		defer func() { statements.log = nil }()
		for _, stmt := range statements.log {
			if strings.Contains(stmt, "FROM events_tokens t WHERE events_tokens MATCH ? ORDER BY t.rowid DESC") && strings.Contains(stmt, "NOT project_token") {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		text    string
		hidden  []string
		require bool
		// indexed: the page of offset 0, limit 50 is read from the index.
		indexed bool
	}{
		{"orbit", []string{"secret"}, false, true},
		{"orbit", []string{"secret"}, true, true},
		{"comet", []string{"secret", flagadmin.AllProjects}, true, true},
		{"orbit", []string{"alpha"}, false, false},
		{"orbit", nil, true, false},
	} {
		for _, p := range [][2]int{{0, 50}, {0, 1}, {20, 30}, {60, 50}, {90, 10}, {0, 200}, {180, 50}} {
			q := flagadmin.EventQuery{Text: c.text, Offset: p[0], Limit: p[1], RequireProject: c.require, HiddenProjects: c.hidden}
			samePage(t, s, mem, q, fmt.Sprintf("%q hiding %q, requiring a project %v, offset %d limit %d", c.text, c.hidden, c.require, p[0], p[1]))
			if indexed := fromIndex(); p == [2]int{0, 50} && indexed != c.indexed {
				t.Errorf("%q hiding %q, requiring a project %v: page read from the index %v, want %v", c.text, c.hidden, c.require, indexed, c.indexed)
			}
		}
	}
}
