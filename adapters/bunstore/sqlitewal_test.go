package bunstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// TestSQLiteWritesLeaveCheckpointsToTheStore: the writer connection of a
// SQLite file never checkpoints the write-ahead log itself (its automatic
// checkpoint is off, so no commit holds every other write while it copies
// the log back), and the store's checkpointer copies the writes back
// into the database file without any further write.
func TestSQLiteWritesLeaveCheckpointsToTheStore(t *testing.T) {
	ctx := context.Background()
	url := dbtest.SQLite(t)
	s := open(t, url)
	var pages int
	if err := bunstore.DB(s).QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if pages != 0 {
		t.Errorf("the writer connection checkpoints every %d pages, want never (0)", pages)
	}
	path := strings.TrimPrefix(url, "sqlite:")
	size := func() int64 {
		fi, err := os.Stat(path)
		must(t, "stat", err)
		return fi.Size()
	}
	before := size()
	b := &flagadmin.Batch{}
	for i := range 2000 {
		b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "ada", CreatedAt: time.Now(),
			FeatureName: ptrTo(fmt.Sprintf("f%d", i)), Data: json.RawMessage(fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", 2000)))})
	}
	must(t, "Write", s.Write(ctx, b))
	deadline := time.Now().Add(30 * time.Second)
	for size() < before+4<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("the database file stayed at %d bytes (%d before the writes): nothing checkpointed the log", size(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
