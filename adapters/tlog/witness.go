package tlog

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// Witnesses, as the C2SP tlog-witness protocol has them: a witness
// remembers the largest tree of a log it has seen and cosigns a checkpoint
// only when a consistency proof shows that it extends that tree. A
// checkpoint cosigned by a witness the verifier trusts was therefore not
// preceded, in that witness's view, by a larger or different tree: a
// rollback of the database (an older copy put back, the server's state
// file lost with it) gets no cosignature, and the witness keeps its size.
//
// What a witness does not prevent: the server serving an old checkpoint
// that was cosigned at the time (the cosignature's timestamp says when),
// nor a log that was rewritten before the witness first saw it.
//
// A witness round trip never delays a write: the Maintainer hands each
// checkpoint to Witnesses.Submit, which only records it; one goroutine per
// witness submits the newest checkpoint when it can. A witness that cannot
// be reached leaves the checkpoints uncosigned, nothing more.
//
// The newest cosigned checkpoint can be kept in a file (KeepCosigned), so
// that a server started again serves its cosignatures at once, not only
// once the witnesses answer again. The file is no more trusted than the
// database: a cosignature read from it is served only when it verifies
// with the key of a witness the server is given, and only for the log's
// current checkpoint.

// CosignedSuffix is added to the state file's name to name the file a
// server keeps its newest cosigned checkpoint in (KeepCosigned).
const CosignedSuffix = ".cosigned"

// DefaultWitnessTimeout bounds one request to a witness.
const DefaultWitnessTimeout = 10 * time.Second

// maxWitnessAnswer bounds the answer of a witness: a few signature
// lines (one per key it signs with).
const maxWitnessAnswer = 16 << 10

// Witness is a witness the server submits its checkpoints to.
type Witness struct {
	// URL is the witness's prefix: checkpoints go to URL/add-checkpoint.
	URL string
	// Verifier checks the witness's cosignatures (ParseWitnessKey).
	Verifier note.Verifier
}

// Name is the witness's name, as its cosignature lines give it.
func (w Witness) Name() string { return w.Verifier.Name() }

// ParseWitnessKey reads a witness's verifier key: a signed-note key of
// type Ed25519 cosignature (C2SP tlog-cosignature, what litewitness
// prints), or a plain Ed25519 note key, read as the cosignature key of the
// same Ed25519 key. Surrounding white space is allowed.
func ParseWitnessKey(text string) (note.Verifier, error) {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "PRIVATE+KEY+") {
		return nil, errors.New("this is a signing key, which must stay secret; give the witness's verifier key")
	}
	v, err := fnote.NewVerifierForCosignatureV1(text)
	if err != nil {
		return nil, fmt.Errorf("not a witness verifier key (name+hash+key, as the witness prints it): %v", err)
	}
	return v, nil
}

// ParseWitnessURL checks a witness's URL: http or https with a host, no
// query or fragment. The trailing / is dropped.
func ParseWitnessURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return "", fmt.Errorf("%q is not a URL", raw)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return "", fmt.Errorf("%q is not an http:// or https:// URL", raw)
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%q has a query or a fragment; give the witness's prefix (checkpoints go to PREFIX/add-checkpoint)", raw)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// Cosigned reports whether note carries a valid cosignature of the
// witness of v, and when the witness made it.
func Cosigned(text []byte, v note.Verifier) (time.Time, error) {
	n, err := note.Open(text, note.VerifierList(v))
	if err != nil {
		var unverified *note.UnverifiedNoteError
		if errors.As(err, &unverified) {
			return time.Time{}, fmt.Errorf("no cosignature of the witness %s", v.Name())
		}
		return time.Time{}, fmt.Errorf("the cosignature of the witness %s does not verify: %v", v.Name(), err)
	}
	at, err := fnote.CoSigV1Timestamp(n.Sigs[0])
	if err != nil {
		return time.Time{}, fmt.Errorf("the cosignature of the witness %s: %v", v.Name(), err)
	}
	return at, nil
}

// WitnessOptions configure Witnesses.
type WitnessOptions struct {
	// Client sends the requests; nil for a client of its own.
	Client *http.Client
	// Timeout bounds each request; 0 means DefaultWitnessTimeout.
	Timeout time.Duration
	// Logger receives each witness's failures (the first of a run) and
	// recoveries; nil discards them.
	Logger *slog.Logger
	// Clock is the time of the last cosignature (nil for time.Now).
	Clock func() time.Time
}

// WitnessStatus is what the server knows of one witness.
type WitnessStatus struct {
	Name, URL string
	// CosignedSize is the size of the newest checkpoint the witness
	// cosigned for this server, -1 before the first.
	CosignedSize int64
	// LastCosigned is when it cosigned it (zero before the first).
	LastCosigned time.Time
	// Problem is why the last submission failed, "" when it did not.
	Problem string
	// Refused: the witness answered, and refused the checkpoint (it knows
	// a larger tree, or the proof from its tree failed); not refused with
	// a Problem: it could not be reached or failed.
	Refused bool
}

// Witnesses submits the checkpoints of a log to its witnesses in the
// background and keeps their cosignatures of the newest one. It is safe
// for concurrent use.
type Witnesses struct {
	prover *Prover
	client *http.Client
	log    *slog.Logger
	clock  func() time.Time
	list   []*witnessState

	mu      sync.Mutex
	pending vlog.Checkpoint

	// keep is the file of the newest cosigned checkpoint ("" for none),
	// kept what it holds, keepErr why it was last not written.
	keepMu  sync.Mutex
	keep    string
	kept    []byte
	keepErr error
}

// witnessState is one witness's state: what it knows and cosigned.
type witnessState struct {
	Witness
	wake chan struct{}

	mu sync.Mutex
	// known is the size of the witness's tree of this log as it last
	// said (0 before it did: the protocol's first guess).
	known int64
	// cosigned is the checkpoint it cosigned last, lines its cosignature.
	cosigned vlog.Checkpoint
	lines    []byte
	at       time.Time
	problem  error
}

// NewWitnesses returns the Witnesses of a log whose proofs prover makes.
func NewWitnesses(prover *Prover, list []Witness, opts WitnessOptions) *Witnesses {
	ws := &Witnesses{prover: prover, client: opts.Client, log: opts.Logger, clock: opts.Clock}
	if ws.client == nil {
		timeout := opts.Timeout
		if timeout <= 0 {
			timeout = DefaultWitnessTimeout
		}
		ws.client = &http.Client{Timeout: timeout}
	}
	if ws.log == nil {
		ws.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if ws.clock == nil {
		ws.clock = time.Now
	}
	for _, w := range list {
		ws.list = append(ws.list, &witnessState{Witness: w, wake: make(chan struct{}, 1), cosigned: vlog.Checkpoint{Size: -1}})
	}
	return ws
}

// Submit hands the newest checkpoint to the witnesses and returns at once:
// each witness gets it when its earlier submission is done (a newer
// checkpoint handed meanwhile replaces it).
func (ws *Witnesses) Submit(cp vlog.Checkpoint) {
	if len(cp.Note) == 0 {
		return
	}
	ws.mu.Lock()
	ws.pending = cp
	ws.mu.Unlock()
	for _, w := range ws.list {
		select {
		case w.wake <- struct{}{}:
		default: // it is awake already, and will take the newest
		}
	}
}

// Run submits checkpoints to each witness, one goroutine per witness,
// until ctx ends.
func (ws *Witnesses) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, w := range ws.list {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-w.wake:
				}
				ws.mu.Lock()
				cp := ws.pending
				ws.mu.Unlock()
				got, err := ws.submit(ctx, w, cp)
				if ctx.Err() != nil {
					return
				}
				ws.report(w, got, err)
				if err == nil {
					ws.keepCosigned()
				}
			}
		})
	}
	wg.Wait()
}

// Cosign returns cp's note with the cosignatures the witnesses made of it
// (the same size and root) added.
func (ws *Witnesses) Cosign(cp vlog.Checkpoint) vlog.Checkpoint {
	var lines []byte
	for _, w := range ws.list {
		w.mu.Lock()
		if w.cosigned.Size == cp.Size && w.cosigned.Root == cp.Root {
			lines = append(lines, w.lines...)
		}
		w.mu.Unlock()
	}
	if lines != nil {
		cp.Note = append(bytes.Clone(cp.Note), lines...)
	}
	return cp
}

// Status returns what the server knows of each witness, in the order given.
func (ws *Witnesses) Status() []WitnessStatus {
	out := make([]WitnessStatus, 0, len(ws.list))
	for _, w := range ws.list {
		w.mu.Lock()
		st := WitnessStatus{Name: w.Name(), URL: w.URL, CosignedSize: w.cosigned.Size, LastCosigned: w.at}
		if w.problem != nil {
			st.Problem = w.problem.Error()
			st.Refused = errors.Is(w.problem, errWitnessRefused)
		}
		w.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// errWitnessRefused: the witness answered, and refused the checkpoint.
var errWitnessRefused = errors.New("refused by the witness")

// witnessRefusal is a refusal of the witness, saying why.
type witnessRefusal string

func (r witnessRefusal) Error() string        { return string(r) }
func (r witnessRefusal) Is(target error) bool { return target == errWitnessRefused }

// cosignature is a checkpoint a witness cosigned, and its lines.
type cosignature struct {
	cp    vlog.Checkpoint
	lines []byte
}

// submit gets cp cosigned by w, unless w cosigned it already (then it
// returns nil and no error). A witness whose tree is not the size the
// server thought answers 409 with its size: the request is sent again with
// a proof from that size. What w cosigns is kept by report.
func (ws *Witnesses) submit(ctx context.Context, w *witnessState, cp vlog.Checkpoint) (*cosignature, error) {
	w.mu.Lock()
	old, done := w.known, w.cosigned.Size == cp.Size && w.cosigned.Root == cp.Root
	w.mu.Unlock()
	if done {
		return nil, nil
	}
	for range 3 {
		if old > cp.Size {
			return nil, witnessRefusal(fmt.Sprintf("the witness has seen a larger tree of this log (%d events) than this checkpoint (%d events): an older copy of the database was put back, or events were removed, and the witness does not cosign it",
				old, cp.Size))
		}
		lines, known, err := ws.addCheckpoint(ctx, w, old, cp)
		if err != nil {
			return nil, err
		}
		if lines == nil { // 409
			w.mu.Lock()
			w.known = known
			w.mu.Unlock()
			old = known
			continue
		}
		lines = cosignatureLines(lines, w.Verifier)
		if lines == nil {
			return nil, fmt.Errorf("the witness answered no cosignature line of its key %s+%08x", w.Name(), w.Verifier.KeyHash())
		}
		if _, err := Cosigned(append(bytes.Clone(cp.Note), lines...), w.Verifier); err != nil {
			return nil, fmt.Errorf("the witness's answer: %v", err)
		}
		return &cosignature{cp, lines}, nil
	}
	return nil, fmt.Errorf("the witness's tree changed size three times in a row (now %d events); trying again with the next checkpoint", old)
}

// addCheckpoint sends one add-checkpoint request: cp with the proof from
// the tree of old leaves. It returns the cosignature lines, or on a 409
// nil and the size the witness knows.
func (ws *Witnesses) addCheckpoint(ctx context.Context, w *witnessState, old int64, cp vlog.Checkpoint) ([]byte, int64, error) {
	body, err := ws.addCheckpointBody(ctx, old, cp)
	if err != nil {
		return nil, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL+"/add-checkpoint", body)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := ws.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot reach the witness: %v", errors.Unwrap(err))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxWitnessAnswer))
	if err != nil {
		return nil, 0, fmt.Errorf("the witness's answer was cut off: %v", err)
	}
	return witnessAnswer(resp, answer, old, cp)
}

// addCheckpointBody is the body of an add-checkpoint request: "old N",
// the consistency proof from the tree of old leaves to cp's, a blank line
// and cp's note.
func (ws *Witnesses) addCheckpointBody(ctx context.Context, old int64, cp vlog.Checkpoint) (*bytes.Buffer, error) {
	var body bytes.Buffer
	fmt.Fprintf(&body, "old %d\n", old)
	if old > 0 && old < cp.Size {
		proof, err := ws.prover.ConsistencyProof(ctx, old, cp.Size)
		if err != nil {
			return nil, fmt.Errorf("the consistency proof from %d events: %v", old, err)
		}
		for _, h := range proof {
			body.WriteString(base64.StdEncoding.EncodeToString(h) + "\n")
		}
	}
	body.WriteString("\n")
	body.Write(cp.Note)
	return &body, nil
}

// witnessAnswer reads the witness's answer to an add-checkpoint request
// of cp from the tree of old leaves: the cosignature lines (200), or nil
// and the size the witness knows (409), or why it refused or failed.
func witnessAnswer(resp *http.Response, answer []byte, old int64, cp vlog.Checkpoint) ([]byte, int64, error) {
	said := strings.TrimSpace(string(answer))
	if i := strings.IndexByte(said, '\n'); i >= 0 {
		said = said[:i]
	}
	switch resp.StatusCode {
	case http.StatusOK:
		if len(answer) == 0 || answer[len(answer)-1] != '\n' {
			return nil, 0, errors.New("the witness answered no cosignature line")
		}
		return answer, 0, nil
	case http.StatusConflict:
		known, err := strconv.ParseInt(said, 10, 64)
		if err != nil || known < 0 {
			return nil, 0, fmt.Errorf("the witness answered 409 without its tree size (%q)", said)
		}
		return nil, known, nil
	case http.StatusUnprocessableEntity:
		return nil, 0, witnessRefusal(fmt.Sprintf("the witness refused the consistency proof from its tree of %d events: this log does not extend the tree the witness saw (rewritten, or an older copy of the database put back and written to since)", old))
	case http.StatusForbidden:
		return nil, 0, witnessRefusal(fmt.Sprintf("the witness does not know this log or its key (it answered %q); add it there: the log's origin %q and its verifier key", said, originOf(cp.Note)))
	case http.StatusBadRequest:
		return nil, 0, witnessRefusal(fmt.Sprintf("the witness refused the request: %q", said))
	}
	return nil, 0, fmt.Errorf("the witness answered %s: %q", resp.Status, said)
}

// cosignatureLines keeps, of a witness's answer, the signature lines of
// its key (the note's "— name base64" lines whose signature starts with
// the key's hash): a line in another's name, served beside the
// checkpoint, would make that other witness's cosignature fail to verify.
func cosignatureLines(answer []byte, v note.Verifier) []byte {
	var out []byte
	prefix := "\u2014 " + v.Name() + " "
	for line := range strings.Lines(string(answer)) {
		b64, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), prefix)
		if !ok {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(sig) < 4 || binary.BigEndian.Uint32(sig) != v.KeyHash() {
			continue
		}
		out = append(out, strings.TrimSuffix(line, "\n")+"\n"...)
	}
	return out
}

// originOf is the first line of a checkpoint note.
func originOf(note []byte) string {
	origin, _, _ := bytes.Cut(note, []byte("\n"))
	return string(origin)
}

// report records the outcome of a submission: what the witness cosigned
// (got, nil when nothing new) or the error. A failure is logged when it
// starts a run of failures (or turns from unreachable to refused, or back),
// a success after failures too; the line is logged before the outcome is
// kept, so whoever sees the outcome in Status or Cosign finds the line in
// the log. Only the witness's own goroutine changes its problem.
func (ws *Witnesses) report(w *witnessState, got *cosignature, err error) {
	w.mu.Lock()
	before := w.problem
	size := w.cosigned.Size
	w.mu.Unlock()
	if got != nil {
		size = got.cp.Size
	}
	switch {
	case err != nil && (before == nil || errors.Is(before, errWitnessRefused) != errors.Is(err, errWitnessRefused)):
		if errors.Is(err, errWitnessRefused) {
			ws.log.Error("log: a witness refuses to cosign the checkpoint; the server keeps signing and serving it uncosigned",
				"witness", w.Name(), "url", w.URL, "problem", err)
		} else {
			ws.log.Warn("log: a witness cannot cosign; the server keeps signing and serving checkpoints uncosigned, and tries again with each round",
				"witness", w.Name(), "url", w.URL, "problem", err)
		}
	case err == nil && before != nil:
		ws.log.Info("log: a witness cosigns again", "witness", w.Name(), "url", w.URL, "size", size)
	}
	w.mu.Lock()
	w.problem = err
	if got != nil {
		w.known, w.cosigned, w.lines, w.at = got.cp.Size, got.cp, got.lines, ws.clock()
	}
	w.mu.Unlock()
}

// KeptCosignatures is what KeepCosigned found in its file.
type KeptCosignatures struct {
	// Size is the size of the checkpoint the file holds, -1 when there is
	// no file or it holds no checkpoint.
	Size int64
	// Restored names the witnesses whose cosignatures of the current
	// checkpoint were read from the file, and are served.
	Restored []string
	// Dropped says why cosignatures in the file are not served: of
	// another checkpoint, or not verifying with a witness's key.
	Dropped []string
}

// KeepCosigned makes ws keep the newest checkpoint its witnesses cosigned,
// with their cosignatures, in the file path (replaced atomically each time
// a witness cosigns), and reads what the file holds now: cosignatures of
// current, the log's current checkpoint, that verify with the key of one
// of ws's witnesses are served at once (Cosign) as if that witness had
// just answered. The rest is not served: a file of another checkpoint (an
// older one, or of a log that was rolled back), a cosignature that does
// not verify (the file was edited), one of a witness not given. Call it
// before Run. It fails only when the file exists and cannot be read.
func (ws *Witnesses) KeepCosigned(path string, current vlog.Checkpoint) (KeptCosignatures, error) {
	kept := KeptCosignatures{Size: -1}
	ws.keepMu.Lock()
	ws.keep = path
	ws.keepMu.Unlock()
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return kept, nil
	case err != nil:
		return kept, fmt.Errorf("cannot read the file of the cosigned checkpoint: %v", err)
	}
	kept.Size = checkpointSize(b)
	switch {
	case len(current.Note) == 0:
		kept.Dropped = append(kept.Dropped, fmt.Sprintf("%s holds a checkpoint of %d events, and the log has none signed: its cosignatures are not served",
			path, kept.Size))
		return kept, nil
	case !bytes.HasPrefix(b, current.Note):
		kept.Dropped = append(kept.Dropped, fmt.Sprintf("%s holds a checkpoint of %d events, not the current one (of %d events): its cosignatures are not served",
			path, kept.Size, current.Size))
		return kept, nil
	}
	rest := b[len(current.Note):]
	for _, w := range ws.list {
		lines := cosignatureLines(rest, w.Verifier)
		if lines == nil {
			continue
		}
		at, err := Cosigned(append(bytes.Clone(current.Note), lines...), w.Verifier)
		if err != nil {
			kept.Dropped = append(kept.Dropped, fmt.Sprintf("%s: %v: not served", path, err))
			continue
		}
		w.mu.Lock()
		w.known, w.cosigned, w.lines, w.at = current.Size, current, lines, at
		w.mu.Unlock()
		kept.Restored = append(kept.Restored, w.Name())
	}
	return kept, nil
}

// checkpointSize is the tree size a checkpoint note states on its second
// line, -1 when it states none.
func checkpointSize(note []byte) int64 {
	lines := strings.SplitN(string(note), "\n", 3)
	if len(lines) < 3 {
		return -1
	}
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// keepCosigned writes the newest checkpoint a witness cosigned, with the
// cosignatures every witness made of it, to the file of KeepCosigned (when
// it changed). A failure is logged when it starts a run of failures, and
// the recovery.
func (ws *Witnesses) keepCosigned() {
	ws.keepMu.Lock()
	defer ws.keepMu.Unlock()
	if ws.keep == "" {
		return
	}
	newest := vlog.Checkpoint{Size: -1}
	for _, w := range ws.list {
		w.mu.Lock()
		if w.cosigned.Size > newest.Size {
			newest = w.cosigned
		}
		w.mu.Unlock()
	}
	if newest.Size < 0 {
		return
	}
	note := ws.Cosign(newest).Note
	if bytes.Equal(note, ws.kept) {
		return
	}
	err := replaceFile(ws.keep, note)
	switch {
	case err != nil && ws.keepErr == nil:
		ws.log.Warn("log: cannot keep the cosigned checkpoint; a restart serves the checkpoint uncosigned until the witnesses answer again",
			"file", ws.keep, "problem", err)
	case err == nil && ws.keepErr != nil:
		ws.log.Info("log: the cosigned checkpoint is kept again", "file", ws.keep, "size", newest.Size)
	}
	ws.keepErr = err
	if err == nil {
		ws.kept = note
	}
}
