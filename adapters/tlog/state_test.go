package tlog_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// stateSigner returns a signer over s keeping its state in path.
func stateSigner(t *testing.T, s vlog.Store, skey, path string) (*tlog.Signer, *tlog.StateCreated) {
	t.Helper()
	signer := newSigner(t, s, skey)
	created, err := signer.KeepState(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return signer, created
}

func TestSignerStateWithReplicas(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	skey, _ := keys(t)
	write(t, s, 0, 100, "")
	a, created := stateSigner(t, s, skey, filepath.Join(t.TempDir(), "a"))
	if created == nil || created.Size != 0 {
		t.Errorf("a new state file on a store without checkpoint: got %+v, want created from none", created)
	}
	if cp, signed, err := a.Sign(ctx); err != nil || !signed || cp.Size != 100 {
		t.Fatalf("replica A: %d, %v, %v", cp.Size, signed, err)
	}
	// Replica B starts later, without a state file: from the store's
	// checkpoint, whose signature verifies; it signs a bigger tree.
	write(t, s, 100, 50, "")
	bFile := filepath.Join(t.TempDir(), "b")
	b, created := stateSigner(t, s, skey, bFile)
	if created == nil || created.Size != 100 {
		t.Errorf("replica B's state file: got %+v, want created from the checkpoint of 100", created)
	}
	if cp, signed, err := b.Sign(ctx); err != nil || !signed || cp.Size != 150 {
		t.Fatalf("replica B: %d, %v, %v", cp.Size, signed, err)
	}
	// A's last checkpoint is older than B's: B's extends it.
	if cp, signed, err := a.Sign(ctx); err != nil || signed || cp.Size != 150 {
		t.Errorf("replica A after B signed more: %d, signed %v, %v; want B's 150 and no refusal", cp.Size, signed, err)
	}
	write(t, s, 150, 10, "")
	if cp, signed, err := a.Sign(ctx); err != nil || !signed || cp.Size != 160 {
		t.Errorf("replica A: %d, %v, %v; want a checkpoint of 160", cp.Size, signed, err)
	}
	if b, _ := os.ReadFile(bFile); !bytes.HasPrefix(b, []byte(testOrigin+"\n150\n")) {
		t.Errorf("B's state file: %q, want its checkpoint of 150", b)
	}
	// A store checkpoint of another key is not trusted for a new state file.
	other, _ := keys(t)
	_, created = stateSigner(t, s, other, filepath.Join(t.TempDir(), "c"))
	if created == nil || created.Size != 0 {
		t.Errorf("a state file under another key: got %+v, want created from none", created)
	}
	// A state file of another key is refused at once.
	if _, err := newSigner(t, s, other).KeepState(ctx, bFile); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Errorf("KeepState with another key's file: %v", err)
	}
}

func TestMaintainerRefusesAnOlderCopyOnce(t *testing.T) {
	ctx := context.Background()
	skey, _ := keys(t)
	state := filepath.Join(t.TempDir(), "state")
	newer := memstore.New()
	write(t, newer, 0, 80, "")
	signer, _ := stateSigner(t, newer, skey, state)
	if _, _, err := signer.Sign(ctx); err != nil {
		t.Fatal(err)
	}
	// An older copy: the same first 50 events, checkpoints and all.
	older := memstore.New()
	write(t, older, 0, 50, "")
	if _, _, err := newSigner(t, older, skey).Sign(ctx); err != nil {
		t.Fatal(err)
	}
	var out syncbuffer.Buffer
	signer, _ = stateSigner(t, older, skey, state)
	m := tlog.NewMaintainer(tlog.NewProver(older), signer, tlog.MaintainerOptions{Logger: slog.New(slog.NewTextHandler(&out, nil))})
	for range 3 {
		if err := m.Round(ctx); !errors.Is(err, tlog.ErrInconsistent) {
			t.Fatalf("a round over the older copy: %v, want ErrInconsistent", err)
		}
	}
	// Written to since, past the saved size: still not an extension.
	write(t, older, 1000, 40, "")
	m.Round(ctx)
	if err := m.Refused(); err == nil || !strings.Contains(err.Error(), "rollback: the log has 50 events, fewer than the 80 of the checkpoint this server signed last") {
		t.Errorf("Refused: %v", err)
	}
	if cp, _ := older.LatestCheckpoint(ctx); cp.Size != 50 {
		t.Errorf("the older copy's newest checkpoint: %d, want still 50", cp.Size)
	}
	if n := strings.Count(out.String(), "refusing to sign"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once:\n%s", n, out.String())
	}
	// Started again on it, past the saved size but with other events: forged.
	signer, _ = stateSigner(t, older, skey, state)
	if _, _, err := signer.Sign(ctx); err == nil || !strings.Contains(err.Error(), "forged history: the first 80 events no longer hash to the root") {
		t.Errorf("Sign over the older copy written to since: %v", err)
	}
}
