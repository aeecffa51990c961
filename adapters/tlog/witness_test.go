package tlog_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
	"github.com/flagadmin/flagadmin/internal/witnesstest"
)

// witnessed is a log whose checkpoints go to witnesses: its store, its
// maintainer and its witnesses (running until the end of the test), and
// what they logged.
type witnessed struct {
	store     *memstore.Store
	keeper    *tlog.Maintainer
	witnesses *tlog.Witnesses
	log       *syncbuffer.Buffer
}

func newWitnessed(t *testing.T, s *memstore.Store, skey string, list ...tlog.Witness) *witnessed {
	t.Helper()
	w := &witnessed{store: s, log: &syncbuffer.Buffer{}}
	logger := slog.New(slog.NewTextHandler(w.log, nil))
	prover := tlog.NewProver(s)
	w.witnesses = tlog.NewWitnesses(prover, list, tlog.WitnessOptions{Logger: logger})
	w.keeper = tlog.NewMaintainer(prover, newSigner(t, s, skey), tlog.MaintainerOptions{Logger: logger, Witnesses: w.witnesses})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.witnesses.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// round does a maintainer round and returns the newest checkpoint, as
// served: with the cosignatures the witnesses made of it.
func (w *witnessed) round(t *testing.T) vlog.Checkpoint {
	t.Helper()
	if err := w.keeper.Round(context.Background()); err != nil {
		t.Fatalf("round: %v", err)
	}
	cp, _ := w.keeper.Latest()
	return w.witnesses.Cosign(cp)
}

// waitFor polls cond every 10 ms until it holds, for at most 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logKeys returns a new key pair of testOrigin, as text.
func logKeys(t *testing.T) (skey, vkey string) {
	t.Helper()
	skey, vkey, err := tlog.GenerateKey(testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	return skey, vkey
}

// witnessKeys returns the cosignature signer and verifier key of a witness
// that is not running (made with torchwood, as litewitness makes its own).
func witnessKeys(t *testing.T) (*torchwood.CosignatureSigner, string) {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := torchwood.NewCosignatureSigner("witness.test/fake", key)
	if err != nil {
		t.Fatal(err)
	}
	return s, s.Verifier().String()
}

func witnessOf(t *testing.T, url, vkey string) tlog.Witness {
	t.Helper()
	v, err := tlog.ParseWitnessKey(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return tlog.Witness{URL: url, Verifier: v}
}

func TestWitnessCosignsCheckpoints(t *testing.T) {
	skey, vkey := logKeys(t)
	lw := witnesstest.Start(t, "witness.test/one", testOrigin, vkey)
	other := witnesstest.Start(t, "witness.test/other", testOrigin, vkey)
	s := memstore.New()
	saltedWrite(t, s, 0, 20)
	w := newWitnessed(t, s, skey, witnessOf(t, lw.URL, lw.VerifierKey))
	var cp vlog.Checkpoint
	waitFor(t, "a cosigned checkpoint of 20 events", func() bool {
		cp = w.round(t)
		_, err := tlog.Cosigned(cp.Note, witnessOf(t, lw.URL, lw.VerifierKey).Verifier)
		return cp.Size == 20 && err == nil
	})
	if got := lw.Size(testOrigin); got != 20 {
		t.Errorf("the witness knows %d events, want 20", got)
	}
	if _, err := tlog.Cosigned(cp.Note, witnessOf(t, other.URL, other.VerifierKey).Verifier); err == nil || !strings.Contains(err.Error(), "no cosignature of the witness witness.test/other") {
		t.Errorf("Cosigned with another witness's key: %v, want no cosignature", err)
	}
	if v, err := tlog.ParseVerifierKey(vkey); err != nil {
		t.Fatal(err)
	} else if _, err := tlog.OpenCheckpoint(cp.Note, v); err != nil {
		t.Errorf("the cosigned checkpoint no longer opens with the log's key: %v", err)
	}
	// The log grows: the next checkpoint goes with a consistency proof.
	saltedWrite(t, s, 20, 7)
	waitFor(t, "a cosigned checkpoint of 27 events", func() bool {
		cp = w.round(t)
		_, err := tlog.Cosigned(cp.Note, witnessOf(t, lw.URL, lw.VerifierKey).Verifier)
		return cp.Size == 27 && err == nil
	})
	st := w.witnesses.Status()
	if len(st) != 1 || st[0].CosignedSize != 27 || st[0].Problem != "" || st[0].LastCosigned.IsZero() {
		t.Errorf("status: %+v, want cosigned 27, no problem", st)
	}
	// A server started again knows nothing of the witness: its first
	// request says old 0, the witness answers 409 with 27, and it goes
	// again with a proof from 27.
	saltedWrite(t, s, 27, 3)
	again := newWitnessed(t, s, skey, witnessOf(t, lw.URL, lw.VerifierKey))
	waitFor(t, "a restarted server's cosigned checkpoint of 30 events", func() bool {
		cp = again.round(t)
		_, err := tlog.Cosigned(cp.Note, witnessOf(t, lw.URL, lw.VerifierKey).Verifier)
		return cp.Size == 30 && err == nil
	})
	if strings.Contains(again.log.String(), "witness") {
		t.Errorf("a 409 the protocol expects was logged:\n%s", again.log)
	}
}

func TestWitnessRefusesARollback(t *testing.T) {
	skey, vkey := logKeys(t)
	lw := witnesstest.Start(t, "witness.test/one", testOrigin, vkey)
	wit := witnessOf(t, lw.URL, lw.VerifierKey)
	// The log of 20 events, cosigned.
	s := memstore.New()
	saltedWrite(t, s, 0, 20)
	older := memstore.New() // a copy of the database at 10 events
	saltedWrite(t, older, 0, 10)
	w := newWitnessed(t, s, skey, wit)
	waitFor(t, "a cosigned checkpoint of 20 events", func() bool {
		cp := w.round(t)
		_, err := tlog.Cosigned(cp.Note, wit.Verifier)
		return cp.Size == 20 && err == nil
	})
	// An older copy of the database is put back, and the server starts
	// again without its state file: it signs the older tree, which the
	// witness refuses; writes go on, and the witness keeps its size.
	back := newWitnessed(t, older, skey, wit)
	cp := back.round(t)
	waitFor(t, "the witness's refusal", func() bool {
		st := back.witnesses.Status()[0]
		return st.Refused
	})
	if st := back.witnesses.Status()[0]; !strings.Contains(st.Problem, "larger tree of this log (20 events) than this checkpoint (10 events)") {
		t.Errorf("problem: %q", st.Problem)
	}
	if _, err := tlog.Cosigned(back.witnesses.Cosign(cp).Note, wit.Verifier); err == nil {
		t.Errorf("the rolled-back checkpoint of %d events is cosigned", cp.Size)
	}
	saltedWrite(t, older, 100, 15) // other events than the 10 the witness saw
	waitFor(t, "a checkpoint of 25 events refused by the witness", func() bool {
		cp = back.round(t)
		st := back.witnesses.Status()[0]
		return cp.Size == 25 && strings.Contains(st.Problem, "refused the consistency proof from its tree of 20 events")
	})
	if _, err := tlog.Cosigned(back.witnesses.Cosign(cp).Note, wit.Verifier); err == nil {
		t.Errorf("the forked checkpoint of 25 events is cosigned")
	}
	if got := lw.Size(testOrigin); got != 20 {
		t.Errorf("the witness knows %d events, want the 20 it cosigned", got)
	}
	if n := strings.Count(back.log.String(), "a witness refuses to cosign"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once:\n%s", n, back.log)
	}
}

// TestWitnessNeverDelaysAWrite: a witness that holds its requests (here
// until the test releases them) delays neither writes, nor rounds, nor
// the serving of the checkpoint, which goes uncosigned meanwhile; a
// witness that cannot be reached is logged once per outage.
func TestWitnessNeverDelaysAWrite(t *testing.T) {
	skey, _ := keys(t)
	held := make(chan struct{}, 16)
	release := make(chan struct{})
	fake := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		held <- struct{}{}
		<-release
		http.Error(rw, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(fake.Close)
	t.Cleanup(func() { close(release) })
	_, wkey := witnessKeys(t)
	s := memstore.New()
	saltedWrite(t, s, 0, 5)
	w := newWitnessed(t, s, skey, witnessOf(t, fake.URL, wkey))
	w.round(t)
	<-held // the witness holds the checkpoint of 5 events
	// Writes and rounds go on: done is closed while the witness still
	// holds its request (released only at the end of the test).
	done := make(chan struct{})
	var sizes []int64
	var notes []string
	go func() {
		defer close(done)
		for i := range 3 {
			saltedWrite(t, s, 5+i*10, 10)
			if err := w.keeper.Round(context.Background()); err != nil {
				t.Errorf("round: %v", err)
				return
			}
			cp, _ := w.keeper.Latest()
			cp = w.witnesses.Cosign(cp)
			sizes, notes = append(sizes, cp.Size), append(notes, string(cp.Note))
		}
	}()
	waitFor(t, "three writes and rounds while the witness holds a request", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	if want := []int64{15, 25, 35}; !slices.Equal(sizes, want) {
		t.Errorf("checkpoints signed while the witness holds a request: %v, want %v", sizes, want)
	}
	for _, n := range notes {
		if strings.Contains(n, "witness.test") {
			t.Errorf("an uncosigned checkpoint carries a cosignature:\n%s", n)
		}
	}
	if st := w.witnesses.Status()[0]; st.CosignedSize != -1 {
		t.Errorf("status: %+v, want nothing cosigned", st)
	}
}

func TestWitnessUnreachableIsLoggedOncePerOutage(t *testing.T) {
	skey, _ := keys(t)
	signer, wkey := witnessKeys(t)
	var down atomic.Bool
	down.Store(true)
	// Up: it cosigns whatever it is sent, enough to end the outage.
	fake := cosigningWitness(t, signer, &down)
	s := memstore.New()
	saltedWrite(t, s, 0, 5)
	w := newWitnessed(t, s, skey, witnessOf(t, fake.URL, wkey))
	outage := func() {
		for i := range 3 {
			saltedWrite(t, s, int(w.round(t).Size)+i, 1)
			cp := w.round(t)
			waitFor(t, fmt.Sprintf("the witness's failure on the checkpoint of %d events", cp.Size), func() bool {
				st := w.witnesses.Status()[0]
				return strings.Contains(st.Problem, "503") && !st.Refused && st.CosignedSize < cp.Size
			})
		}
	}
	outage()
	if n := strings.Count(w.log.String(), "a witness cannot cosign"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, w.log)
	}
	down.Store(false)
	waitFor(t, "the witness to cosign again", func() bool {
		cp := w.round(t)
		_, err := tlog.Cosigned(cp.Note, witnessOf(t, fake.URL, wkey).Verifier)
		return err == nil
	})
	if !strings.Contains(w.log.String(), "a witness cosigns again") {
		t.Errorf("the recovery was not logged:\n%s", w.log)
	}
	down.Store(true)
	outage()
	if n := strings.Count(w.log.String(), "a witness cannot cosign"); n != 2 {
		t.Errorf("two outages were logged %d times, want twice:\n%s", n, w.log)
	}
}

// TestWitnessAnswerKeepsItsOwnLines: of a witness's answer, only the
// lines of its own key are served with the checkpoint: a line in another
// witness's name would make that witness's cosignature fail to verify.
func TestWitnessAnswerKeepsItsOwnLines(t *testing.T) {
	skey, _ := keys(t)
	signer, wkey := witnessKeys(t)
	other, okey := witnessKeys(t)
	fake := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, signed, _ := bytes.Cut(body, []byte("\n\n"))
		text := string(signed[:bytes.LastIndex(signed, []byte("\n\n"))+1])
		mine, _ := note.Sign(&note.Note{Text: text}, signer)
		// A forged line: the other witness's name and key hash, with a
		// signature that does not verify.
		theirs, _ := note.Sign(&note.Note{Text: text}, other)
		line := strings.TrimSuffix(string(theirs[bytes.LastIndex(theirs, []byte("\n\n"))+2:]), "\n")
		name, b64, _ := strings.Cut(strings.TrimPrefix(line, "— "), " ")
		sig, _ := base64.StdEncoding.DecodeString(b64)
		sig[len(sig)-1] ^= 1
		rw.Write(mine[bytes.LastIndex(mine, []byte("\n\n"))+2:])
		fmt.Fprintf(rw, "— %s %s\n", name, base64.StdEncoding.EncodeToString(sig))
		rw.Write([]byte("— witness.test/fake not-base64\n"))
	}))
	t.Cleanup(fake.Close)
	s := memstore.New()
	saltedWrite(t, s, 0, 5)
	w := newWitnessed(t, s, skey, witnessOf(t, fake.URL, wkey))
	var cp vlog.Checkpoint
	waitFor(t, "a cosigned checkpoint", func() bool {
		cp = w.round(t)
		_, err := tlog.Cosigned(cp.Note, witnessOf(t, fake.URL, wkey).Verifier)
		return err == nil
	})
	if _, err := tlog.Cosigned(cp.Note, witnessOf(t, fake.URL, okey).Verifier); err == nil || !strings.Contains(err.Error(), "no cosignature of the witness witness.test/fake") {
		t.Errorf("the other witness's key: %v, want no cosignature (the forged line dropped)\n%s", err, cp.Note)
	}
	if n := strings.Count(string(cp.Note), "— "); n != 2 {
		t.Errorf("the served note has %d signature lines, want the log's and the witness's:\n%s", n, cp.Note)
	}
}

// cosigningWitness starts a witness that cosigns, with signer, whatever
// it is sent (it checks nothing), or answers 503 while down is set.
func cosigningWitness(t *testing.T, signer note.Signer, down *atomic.Bool) *httptest.Server {
	t.Helper()
	fake := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(rw, "down", http.StatusServiceUnavailable)
			return
		}
		body, _ := io.ReadAll(r.Body)
		_, signed, _ := bytes.Cut(body, []byte("\n\n"))
		text := signed[:bytes.LastIndex(signed, []byte("\n\n"))+1]
		signed, _ = note.Sign(&note.Note{Text: string(text)}, signer)
		rw.Write(signed[bytes.LastIndex(signed, []byte("\n\n"))+2:])
	}))
	t.Cleanup(fake.Close)
	return fake
}
