package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// logEnv is a server over the test world with the verifiable log, and a
// checkpoint of its 5 events when signing.
type logEnv struct {
	*testEnv
	prover   *tlog.Prover
	verifier note.Verifier
}

func newLogEnv(t *testing.T, signing, sign bool) *logEnv {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	if err := flagadmin.NewService(store).LoadSeed(ctx, strings.NewReader(testSeed)); err != nil {
		t.Fatal(err)
	}
	prover := tlog.NewProver(store)
	skey, vkey, err := tlog.GenerateKey("flagadmin.test/log")
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := tlog.ParseVerifierKey(vkey)
	if err != nil {
		t.Fatal(err)
	}
	if sign {
		signer, err := tlog.NewSigner(store, prover, skey, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := signer.Sign(ctx); err != nil {
			t.Fatal(err)
		}
	}
	svc := flagadmin.NewService(store)
	logSvc := vlog.NewService(svc, vlog.Config{Store: store, Prover: prover, Signing: signing})
	s := New(svc, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Log: logSvc})
	return &logEnv{testEnv: &testEnv{svc: svc, store: store, server: s, handler: s.Handler()}, prover: prover, verifier: verifier}
}

func (e *logEnv) get(t *testing.T, path, token string) *httptest.ResponseRecorder {
	t.Helper()
	return e.do(t, request{method: http.MethodGet, path: path, token: token})
}

// event returns the stored event id, as an admin finds it.
func (e *logEnv) event(t *testing.T, id int64) flagadmin.Event {
	t.Helper()
	page, err := e.store.SearchEvents(context.Background(), flagadmin.EventQuery{IDs: []int64{id}, Limit: 1})
	if err != nil || len(page.Events) != 1 {
		t.Fatalf("event %d: %v", id, err)
	}
	return page.Events[0]
}

func TestLogCheckpoint(t *testing.T) {
	e := newLogEnv(t, true, true)
	for _, token := range []string{adminToken, vicToken, ciToken} {
		w := e.do(t, request{method: http.MethodGet, path: "/api/admin/log/checkpoint", token: token})
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("checkpoint: got %d %q: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
		}
		cp, err := tlog.OpenCheckpoint(w.Body.Bytes(), e.verifier)
		if err != nil {
			t.Fatalf("the checkpoint does not verify: %v", err)
		}
		root, _ := e.prover.RootHash(context.Background(), 5)
		if cp.Size != 5 || string(cp.Hash) != string(root[:]) {
			t.Errorf("checkpoint: got size %d root %x, want 5 and %x", cp.Size, cp.Hash, root)
		}
	}
	wantError(t, e.do(t, request{method: http.MethodGet, path: "/api/admin/log/checkpoint", token: clientToken}), http.StatusForbidden, "NoAccessError")
	wantError(t, e.do(t, request{method: http.MethodGet, path: "/api/admin/log/checkpoint"}), http.StatusUnauthorized, "AuthenticationRequired")

	noKey := newLogEnv(t, false, true)
	resp := wantError(t, noKey.do(t, request{method: http.MethodGet, path: "/api/admin/log/checkpoint", token: adminToken}), http.StatusNotFound, "NotFoundError")
	if !strings.Contains(resp.Message, "--log-key") || !strings.Contains(resp.Message, "flagadmin log keygen") {
		t.Errorf("message without a key: got %q, want how to configure one", resp.Message)
	}
	notYet := newLogEnv(t, true, false)
	resp = wantError(t, notYet.do(t, request{method: http.MethodGet, path: "/api/admin/log/checkpoint", token: adminToken}), http.StatusNotFound, "NotFoundError")
	if !strings.Contains(resp.Message, "signed yet") {
		t.Errorf("message before the first checkpoint: got %q", resp.Message)
	}
}

type proofBody struct {
	ID        int64    `json:"id"`
	LeafIndex int64    `json:"leafIndex"`
	TreeSize  int64    `json:"treeSize"`
	LeafHash  []byte   `json:"leafHash"`
	Salt      []byte   `json:"salt"`
	Hashes    [][]byte `json:"hashes"`
}

func TestLogInclusionProof(t *testing.T) {
	e := newLogEnv(t, true, true)
	ctx := context.Background()
	for _, c := range []struct {
		token string
		id    int64
		size  int64
		see   bool
	}{
		{adminToken, 1, 5, true},
		{adminToken, 3, 3, true},
		{adminToken, 5, 5, true},
		{vicToken, 2, 4, true},
		{vicToken, 3, 5, false}, // a private project vic is not a member of
		{vicToken, 4, 5, false}, // no project: hidden from non-admins
		{olgaToken, 3, 5, true}, // a member of the private project
		{adminToken, 99, 5, false},
	} {
		w := e.do(t, request{method: http.MethodGet, path: "/api/admin/log/proof?id=" + itoa(c.id) + "&size=" + itoa(c.size), token: c.token})
		if !c.see {
			resp := wantError(t, w, http.StatusNotFound, "NotFoundError")
			if !strings.Contains(resp.Message, "no event "+itoa(c.id)) {
				t.Errorf("event %d for %s: message %q", c.id, c.token, resp.Message)
			}
			continue
		}
		p := decodeJSON[proofBody](t, w)
		// The caller computes the leaf of the event it sees with the salt.
		ev := e.event(t, c.id)
		ev.Salt = p.Salt
		leaf, err := leaf.LeafHash(ev)
		if err != nil {
			t.Fatalf("proof of %d: the leaf of the event with the salt %x: %v", c.id, p.Salt, err)
		}
		root, _ := e.prover.RootHash(ctx, c.size)
		if p.ID != c.id || p.LeafIndex != c.id-1 || p.TreeSize != c.size || string(p.LeafHash) != string(leaf[:]) || p.Hashes == nil {
			t.Errorf("proof of %d in %d: got %+v", c.id, c.size, p)
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(p.LeafIndex), uint64(c.size), leaf[:], p.Hashes, root[:]); err != nil {
			t.Errorf("proof of %d in %d does not verify: %v", c.id, c.size, err)
		}
	}
	if !strings.Contains(e.get(t, "/api/admin/log/proof?id=1&size=1", adminToken).Body.String(), `"hashes":[]`) {
		t.Errorf("the proof of the only leaf: want an empty path, not null")
	}
	for _, c := range []struct{ query, param, message string }{
		{"size=5", "id", "is required"},
		{"id=1", "size", "is required"},
		{"id=abc&size=5", "id", "must be an integer of 1 or more"},
		{"id=0&size=5", "id", "must be an integer of 1 or more"},
		{"id=1&size=-1", "size", "must be an integer of 1 or more"},
		{"id=1&size=6", "size", "must be at most the log's size, 5, got 6"},
		{"id=3&size=2", "size", "event 3 is leaf 2, so it is only in trees of size 3 or more"},
		{"id=&size=5", "id", "needs a value"},
		{"id=1&id=2&size=5", "id", "more than once"},
		{"id=99999999999999999999&size=5", "id", "must be an integer"},
	} {
		resp := wantError(t, e.do(t, request{method: http.MethodGet, path: "/api/admin/log/proof?" + c.query, token: adminToken}), http.StatusBadRequest, "BadDataError")
		wantDetailPath(t, resp, c.param)
		if !strings.Contains(resp.Details[0].Message, c.message) {
			t.Errorf("%s: got %q, want %q", c.query, resp.Details[0].Message, c.message)
		}
	}
	wantError(t, e.do(t, request{method: http.MethodGet, path: "/api/admin/log/proof?id=1&size=5", token: frontendToken}), http.StatusForbidden, "NoAccessError")
}

func TestLogConsistencyProof(t *testing.T) {
	e := newLogEnv(t, true, true)
	ctx := context.Background()
	for _, c := range [][2]int64{{1, 5}, {2, 5}, {3, 4}, {5, 5}} {
		w := e.do(t, request{method: http.MethodGet, path: "/api/admin/log/consistency?from=" + itoa(c[0]) + "&to=" + itoa(c[1]), token: vicToken})
		p := decodeJSON[struct {
			From, To int64
			Hashes   [][]byte
		}](t, w)
		r1, _ := e.prover.RootHash(ctx, c[0])
		r2, _ := e.prover.RootHash(ctx, c[1])
		if p.From != c[0] || p.To != c[1] || p.Hashes == nil {
			t.Errorf("consistency %v: got %+v", c, p)
		}
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, uint64(c[0]), uint64(c[1]), p.Hashes, r1[:], r2[:]); err != nil {
			t.Errorf("consistency %v does not verify: %v", c, err)
		}
	}
	for _, c := range []struct{ query, param, message string }{
		{"to=5", "from", "is required"},
		{"from=0&to=5", "from", "must be an integer of 1 or more"},
		{"from=4&to=3", "from", "must be at most to (3), got 4"},
		{"from=1&to=6", "to", "must be at most the log's size, 5, got 6"},
		{"from=x&to=y", "to", "must be an integer"},
	} {
		resp := wantError(t, e.do(t, request{method: http.MethodGet, path: "/api/admin/log/consistency?" + c.query, token: adminToken}), http.StatusBadRequest, "BadDataError")
		wantDetailPath(t, resp, c.param)
		found := false
		for _, d := range resp.Details {
			found = found || d.Path == c.param && strings.Contains(d.Message, c.message)
		}
		if !found {
			t.Errorf("%s: got %+v, want %s: %q", c.query, resp.Details, c.param, c.message)
		}
	}
}

func TestLogLeaves(t *testing.T) {
	e := newLogEnv(t, true, true)
	type leavesBody struct {
		TreeSize, Start int64
		Leaves          []struct {
			Index, ID int64
			Hash      []byte
			Pruned    bool
			CreatedAt string
			Project   *string
			Type      string
			Content   []byte
			Salt      []byte
		}
	}
	b := decodeJSON[leavesBody](t, e.do(t, request{method: http.MethodGet, path: "/api/admin/log/leaves", token: adaToken}))
	if b.TreeSize != 5 || b.Start != 0 || len(b.Leaves) != 5 {
		t.Fatalf("leaves: got %+v, want the 5 leaves", b)
	}
	for i, l := range b.Leaves {
		ev := e.event(t, int64(i+1))
		ev.Salt = l.Salt
		want, err := leaf.LeafHash(ev)
		if err != nil {
			t.Fatalf("leaf %d: the leaf of its event with its salt %x: %v", i, l.Salt, err)
		}
		if l.Index != int64(i) || l.ID != int64(i+1) || string(l.Hash) != string(want[:]) || l.Pruned {
			t.Errorf("leaf %d: got %+v", i, l)
		}
		// What the leaf commits to, as served, gives its hash (leaf.LeafOf).
		at, err := time.Parse(time.RFC3339Nano, l.CreatedAt)
		if err != nil || len(l.Content) != 32 {
			t.Fatalf("leaf %d: createdAt %q (%v), content of %d bytes", i, l.CreatedAt, err, len(l.Content))
		}
		tomb := vlog.Leaf{EventID: l.ID, CreatedAt: at, Project: l.Project, Type: l.Type, Content: [32]byte(l.Content)}
		if h := leaf.LeafOf(tomb); string(h[:]) != string(l.Hash) || l.CreatedAt != ev.CreatedAt.UTC().Format(flagadmin.TimeLayout) {
			t.Errorf("leaf %d: its fields %+v do not give its hash, or are not its event's", i, l)
		}
	}
	// A pruned leaf keeps its fields, and has no salt.
	cutoff := func(*flagadmin.Event) (time.Time, error) { return time.Now().Add(time.Hour), nil }
	pruned, err := e.store.PruneEvents(context.Background(), 1, cutoff, func(ids []int64) (flagadmin.Event, error) {
		return flagadmin.Event{Type: flagadmin.EventEventsPruned, CreatedBy: "system", CreatedAt: time.Now()}, nil
	})
	if err != nil || len(pruned) != 1 {
		t.Fatalf("PruneEvents: %v, %v", pruned, err)
	}
	r := e.get(t, "/api/admin/log/leaves?count=1", adminToken)
	first := decodeJSON[leavesBody](t, r).Leaves[0]
	if !first.Pruned || first.ID != pruned[0] || first.Salt != nil || strings.Contains(r.Body.String(), `"salt"`) ||
		string(first.Hash) != string(b.Leaves[0].Hash) || string(first.Content) != string(b.Leaves[0].Content) || first.CreatedAt != b.Leaves[0].CreatedAt {
		t.Errorf("the pruned leaf: got %s, want its fields without a salt", r.Body)
	}
	b = decodeJSON[leavesBody](t, e.do(t, request{method: http.MethodGet, path: "/api/admin/log/leaves?start=3&count=1", token: adminToken}))
	if len(b.Leaves) != 1 || b.Leaves[0].Index != 3 {
		t.Errorf("leaves from 3, 1: got %+v", b)
	}
	if r := e.get(t, "/api/admin/log/leaves?start=9", adminToken); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"leaves":[]`) {
		t.Errorf("leaves past the end: got %d %s, want none", r.Code, r.Body)
	}
	wantError(t, e.do(t, request{method: http.MethodGet, path: "/api/admin/log/leaves", token: eveToken}), http.StatusForbidden, "NoAccessError")
	for _, c := range []struct{ query, param string }{{"count=0", "count"}, {"count=10001", "count"}, {"start=-1", "start"}, {"start=", "start"}} {
		wantDetailPath(t, wantError(t, e.do(t, request{method: http.MethodGet, path: "/api/admin/log/leaves?" + c.query, token: adminToken}), http.StatusBadRequest, "BadDataError"), c.param)
	}
}

func TestLogWithoutALog(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	for _, path := range []string{"/api/admin/log/checkpoint", "/api/admin/log/proof?id=1&size=1", "/api/admin/log/consistency?from=1&to=1", "/api/admin/log/leaves"} {
		resp := wantError(t, e.do(t, request{method: http.MethodGet, path: path, token: adminToken}), http.StatusNotFound, "NotFoundError")
		if !strings.Contains(resp.Message, "keeps no verifiable log") {
			t.Errorf("%s: got %q", path, resp.Message)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
