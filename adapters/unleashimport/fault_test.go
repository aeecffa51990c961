package unleashimport_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/faultproxy"
	"github.com/flagadmin/flagadmin/internal/unleashfixture"
)

// execSource runs statements on the source database.
func execSource(t *testing.T, url string, stmts ...string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range stmts {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// interruptAfterFirstBatch is a target that calls interrupt once its first
// batch of events is written: the import is then cut in the middle.
type interruptAfterFirstBatch struct {
	store
	interrupt func()
}

func (i interruptAfterFirstBatch) Load(ctx context.Context, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error {
	batches := 0
	return i.store.Load(ctx, b, func(emit func([]flagadmin.Event) error) error {
		return events(func(batch []flagadmin.Event) error {
			if err := emit(batch); err != nil {
				return err
			}
			if batches++; batches == 1 {
				i.interrupt()
			}
			return nil
		})
	})
}

// TestInterruptedImportLeavesTargetEmpty: the source connection lost in
// the middle of the events, or the import cancelled (Ctrl-C), after a
// first batch of events was written: the target is as empty as before.
func TestInterruptedImportLeavesTargetEmpty(t *testing.T) {
	src := unleashfixture.Restore(t)
	// Enough events that the rows cannot all sit in socket buffers when the
	// connection is cut: 20,000 of about 1 KB.
	execSource(t, src, `INSERT INTO events (type, created_by, created_by_user_id, data, created_at)
		SELECT 'feature-updated', 'bulk', 3, json_build_object('pad', repeat('x', 1000), 'i', g), now() FROM generate_series(1, 20000) g`)
	u, err := url.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		for _, how := range []string{"source lost", "cancelled"} {
			t.Run(tg.name+"/"+how, func(t *testing.T) {
				proxy, err := faultproxy.New(u.Host)
				if err != nil {
					t.Fatal(err)
				}
				defer proxy.Close()
				via := *u
				via.Host = proxy.Addr()
				source := openSource(t, via.String())
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				interrupt := func() { proxy.Set(faultproxy.Cut) }
				if how == "cancelled" {
					interrupt = cancel
				}
				st := tg.open(t)
				_, err = unleashimport.Import(ctx, source, interruptAfterFirstBatch{st, interrupt}, unleashimport.Options{EventBatch: 500})
				if err == nil {
					t.Fatal("Import: got no error, want the interruption")
				}
				if how == "cancelled" && !errors.Is(err, context.Canceled) {
					t.Errorf("Import: got %v, want context.Canceled", err)
				}
				if how == "source lost" && !strings.HasPrefix(err.Error(), "reading the Unleash database failed: ") {
					t.Errorf("Import: got %q, want the source's failure", err)
				}
				have, err := st.Contents(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				for k, n := range have {
					if n != 0 {
						t.Errorf("after the interruption the store holds %d %s, want nothing", n, k)
					}
				}
			})
		}
	}
}

// TestBadRows: rows that break flagadmin's rules are imported as faithfully
// as the rules allow or skipped, counted with the reason; none is fatal.
func TestBadRows(t *testing.T) {
	src := unleashfixture.Restore(t)
	execSource(t, src,
		`INSERT INTO tags (type, value) VALUES ('simple', 'x')`,
		`INSERT INTO feature_tag (feature_name, tag_type, tag_value) VALUES ('dark-mode', 'simple', 'x')`,
		`INSERT INTO events (type, created_by, tags, data, project, created_at)
			VALUES ('made-up-event', 'someone', '[{"type":"simple","value":"y"},{"type":"simple","value":"ok","color":"green"},{"type":"team","value":"core","color":null}]', '[1,2]', 'default', now())`,
		`SET session_replication_role = replica`, // no foreign key checks: a flag in a project that does not exist
		`INSERT INTO features (name, project, type) VALUES ('orphan-flag', 'no-such-project', 'release')`,
		`INSERT INTO favorite_projects (project, user_id) VALUES ('no-such-project', 3)`,
	)
	st := targets[1].open(t) // SQLite
	sum, err := unleashimport.Import(context.Background(), openSource(t, src), st, unleashimport.Options{})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	for _, c := range []struct {
		kind, reason string
		skipped      bool
	}{
		{"flag tags", "type or value outside 2 to 50 characters", true},
		{"flags", "project does not exist or was not imported", true},
		{"favorite projects", "project not imported", true},
		{"events", "type unknown to flagadmin: kept as it is", false},
		{"events", "tag outside 2 to 50 characters: dropped", false},
		{"events", "tag color not #RRGGBB or null: dropped", false},
		{"events", `data not a JSON object: wrapped as {"value": ...}`, false},
	} {
		k := sum.Kind(c.kind)
		m := k.MappedDown
		if c.skipped {
			m = k.Skipped
		}
		if m[c.reason] < 1 {
			t.Errorf("%s: %q not counted (skipped %v, mapped down %v)", c.kind, c.reason, k.Skipped, k.MappedDown)
		}
	}
	ctx := context.Background()
	if _, err := st.Feature(ctx, "orphan-flag"); !errors.Is(err, flagadmin.ErrNotFound) {
		t.Errorf("orphan-flag: got %v, want not imported", err)
	}
	page, err := st.SearchEvents(ctx, flagadmin.EventQuery{Types: []string{"made-up-event"}, Limit: 1})
	if err != nil || page.Total != 1 {
		t.Fatalf("made-up-event: %v %+v", err, page)
	}
	e := page.Events[0]
	want := []flagadmin.Tag{{Type: "simple", Value: "ok"}, {Type: "team", Value: "core", Color: flagadmin.NullColor}}
	if !slices.Equal(e.Tags, want) || string(e.Data) != `{"value":[1,2]}` || e.ID != 2298 {
		t.Errorf("made-up-event: got %+v, want tags %+v", e, want)
	}
	f, _ := st.Feature(ctx, "dark-mode")
	for _, tag := range f.Tags {
		if tag.Value == "x" {
			t.Errorf("dark-mode keeps the 1-character tag")
		}
	}
}

// TestSourceRefused: an unreachable source, a database that is not
// Unleash's, and a schema older than 5.0 are each one clear error; a
// source that does not answer in time is unreachable (following retries
// it), never "not Unleash" (following stops for good).
func TestSourceRefused(t *testing.T) {
	old := unleashfixture.Restore(t)
	execSource(t, old, `DELETE FROM migrations WHERE name > '/20230101'`)
	for _, c := range []struct {
		name, url string
		before    func(t *testing.T) // sets the source up for the case
		want      error
		says      string
	}{
		{"unreachable", "postgres://nobody@127.0.0.1:1/unleash?sslmode=disable", nil, unleashimport.ErrUnreachable, "cannot be reached"},
		{"not unleash", dbtest.Postgres(t), nil, unleashimport.ErrNotUnleash, "has no table migrations"},
		{"too old", old, nil, unleashimport.ErrUnsupportedVersion, "older than Unleash 5.0"},
		{"not a URL", "mysql://root@localhost/unleash", nil, unleashimport.ErrUnreachable, "PostgreSQL URL"},
		{"no answer in time", old, lockMigrations(old), unleashimport.ErrUnreachable, "cannot be reached"},
		{"migrations of another shape", old, func(t *testing.T) {
			execSource(t, old, `ALTER TABLE migrations RENAME COLUMN name TO title`)
		}, unleashimport.ErrNotUnleash, "a table migrations that is not Unleash's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.before != nil {
				c.before(t)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			src, err := unleashimport.Open(ctx, c.url)
			if err == nil {
				src.Close()
				t.Fatal("Open: got no error")
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "SELECT") {
				t.Errorf("Open: got %q, want %v saying %q on one line", err, c.want, c.says)
			}
		})
	}
}

// lockMigrations returns a set-up that holds a lock on url's migrations
// table until the test ends, so that reading it does not answer.
func lockMigrations(url string) func(t *testing.T) {
	return func(t *testing.T) {
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		if _, err := conn.Exec(context.Background(), `BEGIN; LOCK TABLE migrations IN ACCESS EXCLUSIVE MODE`); err != nil {
			t.Fatal(err)
		}
	}
}
