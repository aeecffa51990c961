package tlog_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// keeping is a server whose witnesses keep their cosigned checkpoint in a
// file: what KeepCosigned found there when it started, and its witnesses
// (running until the end of the test).
type keeping struct {
	*witnessed
	kept tlog.KeptCosignatures
}

// startKeeping starts a server on s whose witnesses keep their newest
// cosigned checkpoint in file, as a server started again would: it reads
// the file against the store's newest checkpoint before its witnesses run.
func startKeeping(t *testing.T, s *memstore.Store, skey, file string, list ...tlog.Witness) *keeping {
	t.Helper()
	w := &witnessed{store: s, log: &syncbuffer.Buffer{}}
	logger := slog.New(slog.NewTextHandler(w.log, nil))
	prover := tlog.NewProver(s)
	w.witnesses = tlog.NewWitnesses(prover, list, tlog.WitnessOptions{Logger: logger})
	w.keeper = tlog.NewMaintainer(prover, newSigner(t, s, skey), tlog.MaintainerOptions{Logger: logger, Witnesses: w.witnesses})
	current, err := s.LatestCheckpoint(context.Background())
	if err != nil && !errors.Is(err, flagadmin.ErrNotFound) {
		t.Fatal(err)
	}
	kept, err := w.witnesses.KeepCosigned(file, current)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.witnesses.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &keeping{witnessed: w, kept: kept}
}

// served is the store's newest checkpoint as the server serves it now,
// without a round: with the cosignatures its witnesses hold of it.
func (k *keeping) served(t *testing.T) vlog.Checkpoint {
	t.Helper()
	cp, err := k.store.LatestCheckpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return k.witnesses.Cosign(cp)
}

// TestWitnessCosignaturesKeptAcrossARestart: the newest cosigned
// checkpoint is kept in a file, and a server started again serves its
// cosignatures at once, while the witness is down; but not a
// cosignature the file was edited to hold, nor one of a checkpoint that
// is no longer the current one, nor one of a witness the server is not
// given.
func TestWitnessCosignaturesKeptAcrossARestart(t *testing.T) {
	skey, _ := keys(t)
	signer, wkey := witnessKeys(t)
	wit := witnessOf(t, "", wkey)
	var down atomic.Bool
	fake := cosigningWitness(t, signer, &down)
	wit.URL = fake.URL
	file := filepath.Join(t.TempDir(), "log.key.checkpoint"+tlog.CosignedSuffix)
	s := memstore.New()
	saltedWrite(t, s, 0, 5)

	first := startKeeping(t, s, skey, file, wit)
	if first.kept.Size != -1 || first.kept.Restored != nil || first.kept.Dropped != nil {
		t.Errorf("no file yet: %+v", first.kept)
	}
	var cosigned vlog.Checkpoint
	waitFor(t, "the cosigned checkpoint of 5 events kept in the file", func() bool {
		cosigned = first.round(t)
		b, _ := os.ReadFile(file)
		_, err := tlog.Cosigned(cosigned.Note, wit.Verifier)
		return err == nil && bytes.Equal(b, cosigned.Note)
	})

	// Started again while the witness is down: the cosignature is served
	// before any round, and the status says what the witness cosigned.
	down.Store(true)
	again := startKeeping(t, s, skey, file, wit)
	if !slices.Equal(again.kept.Restored, []string{wit.Name()}) || again.kept.Size != 5 || again.kept.Dropped != nil {
		t.Errorf("restored: %+v, want the witness's cosignature of 5 events", again.kept)
	}
	if got := again.served(t); !bytes.Equal(got.Note, cosigned.Note) {
		t.Errorf("served at once after a restart:\n%s\nwant\n%s", got.Note, cosigned.Note)
	}
	if st := again.witnesses.Status()[0]; st.CosignedSize != 5 || st.LastCosigned.IsZero() {
		t.Errorf("status after a restart: %+v, want cosigned 5", st)
	}

	// An edited file: the witness's signature changed by one bit.
	b, _ := os.ReadFile(file)
	i := bytes.LastIndex(b, []byte("— "+wit.Name()+" "))
	line := string(b[i : len(b)-1])
	sig, _ := base64.StdEncoding.DecodeString(line[strings.LastIndex(line, " ")+1:])
	sig[len(sig)-1] ^= 1
	edited := append(b[:i:i], "— "+wit.Name()+" "+base64.StdEncoding.EncodeToString(sig)+"\n"...)
	os.WriteFile(file, edited, 0o644)
	forged := startKeeping(t, s, skey, file, wit)
	if forged.kept.Restored != nil || len(forged.kept.Dropped) != 1 || !strings.Contains(forged.kept.Dropped[0], "the cosignature of the witness "+wit.Name()+" does not verify") {
		t.Errorf("an edited file: %+v, want its cosignature dropped as not verifying", forged.kept)
	}
	if got := forged.served(t); strings.Contains(string(got.Note), wit.Name()) {
		t.Errorf("an edited file's cosignature is served:\n%s", got.Note)
	}

	// A new database, no checkpoint signed yet: nothing is served.
	empty := startKeeping(t, memstore.New(), skey, file, wit)
	if empty.kept.Restored != nil || len(empty.kept.Dropped) != 1 || !strings.Contains(empty.kept.Dropped[0], "and the log has none signed") {
		t.Errorf("a file beside a log without checkpoints: %+v", empty.kept)
	}

	// A witness the server is not given: its cosignature is not served.
	os.WriteFile(file, cosigned.Note, 0o644)
	_, otherKey := witnessKeys(t)
	other := startKeeping(t, s, skey, file, witnessOf(t, fake.URL, otherKey))
	if other.kept.Restored != nil || strings.Contains(string(other.served(t).Note), "witness.test") {
		t.Errorf("another witness's server restored %+v and serves\n%s", other.kept, other.served(t).Note)
	}

	// The log grew and was signed while the witness was down: the file's
	// checkpoint is no longer the current one, and nothing is served.
	saltedWrite(t, s, 5, 3)
	if cp := again.round(t); cp.Size != 8 {
		t.Fatalf("signed %d events, want 8", cp.Size)
	}
	later := startKeeping(t, s, skey, file, wit)
	if later.kept.Restored != nil || len(later.kept.Dropped) != 1 ||
		!strings.Contains(later.kept.Dropped[0], "holds a checkpoint of 5 events, not the current one (of 8 events)") {
		t.Errorf("a file of an older checkpoint: %+v", later.kept)
	}
	if got := later.served(t); strings.Contains(string(got.Note), wit.Name()) {
		t.Errorf("the cosignature of an older checkpoint is served with the current one:\n%s", got.Note)
	}
	// The witness is back: the file follows the newest cosigned one.
	down.Store(false)
	waitFor(t, "the cosigned checkpoint of 8 events kept in the file", func() bool {
		cp := later.round(t)
		b, _ := os.ReadFile(file)
		return cp.Size == 8 && bytes.Equal(b, cp.Note) && strings.Contains(string(b), wit.Name())
	})
}
