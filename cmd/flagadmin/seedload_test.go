package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// largeSeedEvents is the size of the seed of TestServeLoadsALargeSeed:
// twice seedProgressStep, so that the log reports progress before the end.
// That the load has no storage deadline, whatever the seed's size, is
// checked on a store whose deadline is far shorter than a small load
// (bunstore's TestLoadHasNoStorageDeadline); here serve takes that path,
// with a deadline of one second, shorter than the load on a 2-core machine.
const largeSeedEvents = 2 * seedProgressStep

// largeSeedAdmin is the admin token of the large seed.
const largeSeedAdmin = "*:*.large-seed-admin"

// largeSeed writes into dir a seed file of largeSeedEvents events drawn
// by worldgen and an admin token, and returns its path.
func largeSeed(dir string) (string, error) {
	path := filepath.Join(dir, "seed.json")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	w.WriteString(`{"apiTokens": [{"secret": "` + largeSeedAdmin + `", "type": "admin", "name": "admin"}], "events": [`)
	world := worldgen.MustNew(worldgen.Config{Events: largeSeedEvents, Projects: 6, Features: 40, Users: 10, Groups: 2, Seed: 19})
	n := 0
	for batch := range world.Events(1000) {
		for _, e := range batch {
			// worldgen's payloads are Unleash's, about 750 bytes an
			// event; the seed that failed had 300.
			e.Data, e.PreData = json.RawMessage(fmt.Sprintf(`{"n":%d,"enabled":%t}`, n, n%2 == 0)), nil
			b, err := flagadmin.SeedEventJSON(e)
			if err != nil {
				return "", err
			}
			if n > 0 {
				w.WriteByte(',')
			}
			w.WriteString("\n")
			w.Write(b)
			n++
		}
	}
	w.WriteString("\n]}\n")
	return path, w.Flush()
}

// TestServeLoadsALargeSeed: serve --seed loads a seed of 20,000 events as
// a bulk load, on every store: no storage deadline applies to it (the
// test's is shorter than the load), the log says how far it is, and the
// events are searchable, in the log and counted once it is done.
func TestServeLoadsALargeSeed(t *testing.T) {
	path, err := largeSeed(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range followDBs {
		t.Run(db.name, func(t *testing.T) {
			cfg := memoryConfig()
			cfg.DB = db.url(t)
			cfg.Seed = path
			cfg.DBTimeout = time.Second
			start := time.Now()
			stderr := &syncbuffer.Buffer{}
			var l *Listener
			// serve's own bound of start-up, not fxtest's 15 s: the load
			// runs on a machine busy with other tests.
			app := fxtest.New(t, serveOptions(cfg, stderr), fx.StartTimeout(startTimeout), fx.Populate(&l))
			app.RequireStart()
			t.Cleanup(app.RequireStop)
			base := "http://" + l.Addr().String()
			fi, _ := os.Stat(path)
			t.Logf("%s: loaded %d events (%d MB) in %s", db.name, largeSeedEvents, fi.Size()>>20, time.Since(start).Round(time.Millisecond))
			log := stderr.String()
			if !strings.Contains(log, "loading seed file "+path) || !strings.Contains(log, fmt.Sprintf("events=%d total=%d", seedProgressStep, largeSeedEvents)) ||
				!strings.Contains(log, fmt.Sprintf("events=%d total=%d", largeSeedEvents, largeSeedEvents)) {
				t.Errorf("the log does not tell the load's progress:\n%s", log)
			}
			status, body := call(t, http.MethodGet, base+"/api/admin/search/events?limit=1", largeSeedAdmin, "")
			var page struct{ Total int }
			if err := json.Unmarshal(body, &page); status != http.StatusOK || err != nil || page.Total != largeSeedEvents {
				t.Errorf("search after the load: %d %s; want total %d", status, body, largeSeedEvents)
			}
			status, body = call(t, http.MethodGet, base+"/api/admin/log/leaves?start="+fmt.Sprint(largeSeedEvents-1)+"&count=1", largeSeedAdmin, "")
			var leaves struct {
				TreeSize int64
				Leaves   []struct{ ID int64 }
			}
			if err := json.Unmarshal(body, &leaves); status != http.StatusOK || err != nil || leaves.TreeSize != largeSeedEvents || len(leaves.Leaves) != 1 || leaves.Leaves[0].ID != largeSeedEvents {
				t.Errorf("the log after the load: %d %s; want %d leaves, the last of event %d", status, body, largeSeedEvents, largeSeedEvents)
			}
		})
	}
}
