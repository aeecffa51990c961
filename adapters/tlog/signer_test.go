package tlog_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

const testOrigin = "flagadmin.example.com/log"

// keys returns a new key pair of testOrigin.
func keys(t testing.TB) (skey string, v note.Verifier) {
	t.Helper()
	skey, vkey, err := tlog.GenerateKey(testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	v, err = tlog.ParseVerifierKey(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return skey, v
}

func newSigner(t testing.TB, s vlog.Store, skey string) *tlog.Signer {
	t.Helper()
	signer, err := tlog.NewSigner(s, tlog.NewProver(s), skey, func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	return signer
}

func TestSignerSignsWhenTheLogGrows(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	skey, v := keys(t)
	signer := newSigner(t, s, skey)
	cp, signed, err := signer.Sign(ctx)
	if err != nil || !signed || cp.Size != 0 {
		t.Fatalf("first Sign on an empty log: got size %d, signed %v, %v; want a checkpoint of size 0", cp.Size, signed, err)
	}
	if _, signed, _ := signer.Sign(ctx); signed {
		t.Errorf("Sign with no new event: signed again")
	}
	write(t, s, 0, 300, "default")
	cp, signed, err = signer.Sign(ctx)
	if err != nil || !signed {
		t.Fatalf("Sign after 300 events: signed %v, %v", signed, err)
	}
	stored, err := s.LatestCheckpoint(ctx)
	if err != nil || !bytes.Equal(stored.Note, cp.Note) {
		t.Fatalf("stored checkpoint: got %q (%v), want the one signed", stored.Note, err)
	}
	opened, err := tlog.OpenCheckpoint(cp.Note, v)
	if err != nil {
		t.Fatalf("OpenCheckpoint: %v", err)
	}
	if opened.Origin != testOrigin || opened.Size != 300 || !bytes.Equal(opened.Hash, rootOf(t, leafHashes(t, s))) {
		t.Errorf("checkpoint: got %s size %d root %x, want %s 300 and the root of the events", opened.Origin, opened.Size, opened.Hash, testOrigin)
	}
	// The C2SP format: origin, size, base64 root, a blank line, the signature.
	lines := strings.Split(string(cp.Note), "\n")
	if len(lines) < 5 || lines[0] != testOrigin || lines[1] != "300" || lines[3] != "" || !strings.HasPrefix(lines[4], "— "+testOrigin+" ") {
		t.Errorf("note: got %q, want origin, size, root, a blank line and the signature line", cp.Note)
	}
	// The library's own parser agrees.
	if _, _, _, err := log.ParseCheckpoint(cp.Note, testOrigin, v); err != nil {
		t.Errorf("log.ParseCheckpoint: %v", err)
	}
	// Another key's verifier refuses it.
	_, other := keys(t)
	if _, err := tlog.OpenCheckpoint(cp.Note, other); err == nil {
		t.Errorf("OpenCheckpoint with another key: got no error")
	}
}

// lyingLog is a log whose leaf hashes, as read, differ from those written
// from index from on: as if the stored leaves were changed.
type lyingLog struct {
	*memstore.Store
	from int64
}

func (l lyingLog) LogHashes(ctx context.Context, ranges []vlog.HashRange) ([][][32]byte, error) {
	runs, err := l.Store.LogHashes(ctx, ranges)
	for i, r := range ranges {
		for j := range runs[i] {
			if r.Level == 0 && r.Start+int64(j) >= l.from {
				runs[i][j][0] ^= 1
			}
		}
	}
	return runs, err
}

func TestSignerRefusesALogThatChanged(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	skey, _ := keys(t)
	write(t, s, 0, 100, "")
	if _, _, err := newSigner(t, s, skey).Sign(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, s, 100, 10, "")
	liar := lyingLog{Store: s, from: 50}
	_, signed, err := newSigner(t, liar, skey).Sign(ctx)
	if !errors.Is(err, tlog.ErrInconsistent) || signed {
		t.Fatalf("Sign over changed leaves: got signed %v, %v; want ErrInconsistent", signed, err)
	}
	if cp, _ := s.LatestCheckpoint(ctx); cp.Size != 100 {
		t.Errorf("latest checkpoint: got size %d, want still 100", cp.Size)
	}
	// Leaves changed only after the checkpoint: nothing it vouched for.
	if _, signed, err := newSigner(t, lyingLog{Store: s, from: 100}, skey).Sign(ctx); err != nil || !signed {
		t.Errorf("Sign with leaves past the checkpoint differing: got signed %v, %v; want a new checkpoint", signed, err)
	}
}

func TestMaintainerRounds(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	skey, _ := keys(t)
	m := tlog.NewMaintainer(tlog.NewProver(s), newSigner(t, s, skey), tlog.MaintainerOptions{})
	write(t, s, 0, 600, "")
	if err := m.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if cp, ok := m.Latest(); !ok || cp.Size != 600 {
		t.Errorf("Latest after a round: got %d, %v; want 600", cp.Size, ok)
	}
	if n, _ := s.LogHashCount(ctx, 8); n != 2 {
		t.Errorf("level 8 after a round: got %d hashes, want 2", n)
	}
	if err := m.Round(ctx); err != nil || m.Signed() != 1 {
		t.Errorf("a round with nothing new: signed %d in all (%v), want 1", m.Signed(), err)
	}
	// Run signs at once.
	s2 := memstore.New()
	write(t, s2, 0, 3, "")
	m2 := tlog.NewMaintainer(tlog.NewProver(s2), newSigner(t, s2, skey), tlog.MaintainerOptions{Interval: time.Hour})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); m2.Run(runCtx) }()
	deadline := time.Now().Add(10 * time.Second)
	for m2.Signed() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if m2.Signed() != 1 {
		t.Errorf("Run: signed %d checkpoints, want 1 at once", m2.Signed())
	}
}

func TestKeys(t *testing.T) {
	skey, vkey, err := tlog.GenerateKey(testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(skey, "PRIVATE+KEY+"+testOrigin+"+") || !strings.HasPrefix(vkey, testOrigin+"+") {
		t.Errorf("keys: got %q and %q, want note keys named %s", skey, vkey, testOrigin)
	}
	if _, err := tlog.ParseVerifierKey(skey); err == nil || !strings.Contains(err.Error(), "signing key") {
		t.Errorf("ParseVerifierKey of the signing key: got %v, want an error saying so", err)
	}
	if _, err := tlog.ParseSignerKey(vkey); err == nil {
		t.Errorf("ParseSignerKey of the verifier key: got no error")
	}
	if _, err := tlog.ParseVerifierKey(vkey + "\n"); err != nil {
		t.Errorf("ParseVerifierKey with a line feed: %v", err)
	}
	for _, bad := range []string{"", "has space", "a+b"} {
		if _, _, err := tlog.GenerateKey(bad); err == nil {
			t.Errorf("GenerateKey(%q): got no error", bad)
		}
	}
}
