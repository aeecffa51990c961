package client_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// logServer serves the test world with the verifiable log; sign signs a
// checkpoint of the log as it is and returns it.
type logServer struct {
	*httptest.Server
	store    *memstore.Store
	verifier note.Verifier
	sign     func(t *testing.T) []byte
}

func startLogServer(t *testing.T, skey, vkey string) *logServer {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	if err := flagadmin.NewService(saltedLoads{store}).LoadSeed(ctx, strings.NewReader(worldSeed(t))); err != nil {
		t.Fatal(err)
	}
	prover := tlog.NewProver(store)
	signer, err := tlog.NewSigner(store, prover, skey, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	svc := flagadmin.NewService(store)
	logSvc := vlog.NewService(svc, vlog.Config{Store: store, Prover: prover, Signing: true})
	s := &logServer{Server: httptest.NewServer(httpapi.New(svc, httpapi.Config{Log: logSvc}).Handler()), store: store, verifier: v}
	s.sign = func(t *testing.T) []byte {
		t.Helper()
		cp, _, err := signer.Sign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return cp.Note
	}
	t.Cleanup(s.Close)
	return s
}

// saltedLoads loads events with salts made from their order, so that two
// servers of the test world hold one log, as a copy of a database does
// (a store draws each salt at random).
type saltedLoads struct{ *memstore.Store }

func (s saltedLoads) Load(ctx context.Context, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error {
	n := 0
	return s.Store.Load(ctx, b, func(emit func([]flagadmin.Event) error) error {
		return events(func(batch []flagadmin.Event) error {
			for i := range batch {
				n++
				h := sha256.Sum256([]byte(fmt.Sprint("salt of event ", n)))
				batch[i].Salt = h[:leaf.SaltSize]
			}
			return emit(batch)
		})
	})
}

func TestVerifyEvent(t *testing.T) {
	ctx := context.Background()
	skey, vkey, err := tlog.GenerateKey("flagadmin.test/log")
	if err != nil {
		t.Fatal(err)
	}
	s := startLogServer(t, skey, vkey)
	saved := s.sign(t)
	eve := newClient(t, s.URL, eveToken)
	page, err := eve.SearchEvents(ctx, flagadmin.EventSearchParams{Limit: "3"})
	if err != nil || len(page.Events) != 3 {
		t.Fatalf("search: %v", err)
	}
	for _, ev := range page.Events {
		cp, err := eve.VerifyEvent(ctx, ev, nil, s.verifier)
		if err != nil {
			t.Fatalf("VerifyEvent(%d) with the newest checkpoint: %v", ev.ID, err)
		}
		if cp.Size != worldEvents || cp.Origin != "flagadmin.test/log" {
			t.Errorf("checkpoint: got %d events of %s", cp.Size, cp.Origin)
		}
		if _, err := eve.VerifyEvent(ctx, ev, saved, s.verifier); err != nil {
			t.Errorf("VerifyEvent(%d) with a saved checkpoint: %v", ev.ID, err)
		}
		changed := ev
		changed.CreatedBy = "mallory"
		if _, err := eve.VerifyEvent(ctx, changed, nil, s.verifier); !errors.Is(err, client.ErrNotProven) {
			t.Errorf("VerifyEvent of a changed event: got %v, want ErrNotProven", err)
		}
	}
	// An event of the private project: the viewer may not see it.
	hidden := flagadmin.Event{ID: 3}
	_, err = newClient(t, s.URL, vicToken).VerifyEvent(ctx, hidden, nil, s.verifier)
	wantAPIError(t, err, http.StatusNotFound, "NotFoundError", flagadmin.ErrNotFound)
	// A checkpoint signed by another key.
	_, otherKey, _ := tlog.GenerateKey("flagadmin.test/log")
	other, _ := note.NewVerifier(otherKey)
	if _, err := eve.VerifyEvent(ctx, page.Events[0], nil, other); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Errorf("VerifyEvent with another key: got %v", err)
	}
}

func TestVerifyConsistency(t *testing.T) {
	ctx := context.Background()
	skey, vkey, _ := tlog.GenerateKey("flagadmin.test/log")
	s := startLogServer(t, skey, vkey)
	older := s.sign(t)
	b := &flagadmin.Batch{Events: []flagadmin.Event{{Type: flagadmin.EventFeatureUpdated, CreatedBy: "ada", CreatedAt: worldStart}}}
	if err := s.store.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	newer := s.sign(t)
	c := newClient(t, s.URL, vicToken)
	if err := c.VerifyConsistency(ctx, older, newer, s.verifier); err != nil {
		t.Errorf("VerifyConsistency: %v", err)
	}
	if err := c.VerifyConsistency(ctx, newer, older, s.verifier); !errors.Is(err, client.ErrNotProven) {
		t.Errorf("VerifyConsistency backwards: got %v, want ErrNotProven", err)
	}
	// Another log under the same key (an older copy, then other events).
	s2 := startLogServer(t, skey, vkey)
	b = &flagadmin.Batch{Events: []flagadmin.Event{{Type: flagadmin.EventFeatureUpdated, CreatedBy: "eve", CreatedAt: worldStart}}}
	if err := s2.store.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	forked := s2.sign(t)
	if err := newClient(t, s2.URL, vicToken).VerifyConsistency(ctx, older, forked, s.verifier); err != nil {
		t.Errorf("VerifyConsistency from a common prefix: %v", err)
	}
	if err := c.VerifyConsistency(ctx, forked, newer, s.verifier); !errors.Is(err, client.ErrNotProven) {
		t.Errorf("VerifyConsistency of two different logs of one size: got %v, want ErrNotProven", err)
	}
}

func TestLogLeavesAndCheckpoint(t *testing.T) {
	ctx := context.Background()
	skey, vkey, _ := tlog.GenerateKey("flagadmin.test/log")
	s := startLogServer(t, skey, vkey)
	s.sign(t)
	page, err := newClient(t, s.URL, adminToken).LogLeaves(ctx, 1000, 500)
	if err != nil || page.TreeSize != worldEvents || len(page.Leaves) != worldEvents-1000 || page.Leaves[0].Index != 1000 {
		t.Fatalf("LogLeaves: got %d of %d (%v)", len(page.Leaves), page.TreeSize, err)
	}
	// Each leaf with what it commits to: its hash is LeafOf them, and its
	// event, with its salt, matches it.
	events, err := s.store.SearchEvents(ctx, flagadmin.EventQuery{IDs: []int64{page.Leaves[0].EventID, page.Leaves[1].EventID}, Limit: 2})
	if err != nil || len(events.Events) != 2 {
		t.Fatalf("the leaves' events: %v", err)
	}
	for i, l := range page.Leaves {
		if leaf.LeafOf(l) != l.Hash || len(l.Salt) != leaf.SaltSize {
			t.Fatalf("leaf %d: LeafOf %x, hash %x, salt %x", l.Index, leaf.LeafOf(l), l.Hash, l.Salt)
		}
		if i < 2 {
			ev := events.Events[1-i] // newest first
			ev.Salt = l.Salt
			if ok, err := leaf.LeafMatches(l, ev); !ok || err != nil {
				t.Errorf("leaf %d: its event does not match it (%v)", l.Index, err)
			}
		}
	}
	_, err = newClient(t, s.URL, vicToken).LogLeaves(ctx, 0, 1)
	wantAPIError(t, err, http.StatusForbidden, "NoAccessError", flagadmin.ErrNoAccess)
	// A server without a key.
	plain := startServer(t, memstore.New())
	_, err = newClient(t, plain.URL, adminToken).LogCheckpoint(ctx)
	wantAPIError(t, err, http.StatusNotFound, "NotFoundError", flagadmin.ErrNotFound)
}
