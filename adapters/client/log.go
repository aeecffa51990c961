package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// Paths of the verifiable log.
const (
	logCheckpointPath  = "/api/admin/log/checkpoint"
	logProofPath       = "/api/admin/log/proof"
	logConsistencyPath = "/api/admin/log/consistency"
	logLeavesPath      = "/api/admin/log/leaves"
)

// ErrNotProven: the server's proof does not show what was asked (an event
// that is not in the log as the caller holds it, or a log that did not
// only grow). The error that wraps it says what failed.
var ErrNotProven = errors.New("not proven by the log")

// Checkpoint is a signed checkpoint whose signature was checked.
type Checkpoint struct {
	// Origin names the log: the name of the key that signed it.
	Origin string
	// Size is the number of events it covers.
	Size int64
	// Root is the root hash of the tree of those events.
	Root [32]byte
	// Note is the signed note as served.
	Note []byte
}

// OpenCheckpoint checks a checkpoint note's signature with v (whose name
// must be the checkpoint's origin) and returns what it states. v comes from
// note.NewVerifier of the log's verifier key, the .pub file "flagadmin log
// keygen" writes.
func OpenCheckpoint(text []byte, v note.Verifier) (Checkpoint, error) {
	cp, _, _, err := log.ParseCheckpoint(text, v.Name(), v)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("client: the checkpoint does not verify with the key of %s: %v", v.Name(), err)
	}
	if len(cp.Hash) != 32 {
		return Checkpoint{}, fmt.Errorf("client: the checkpoint's root hash has %d bytes, want 32", len(cp.Hash))
	}
	return Checkpoint{Origin: cp.Origin, Size: int64(cp.Size), Root: [32]byte(cp.Hash), Note: text}, nil
}

// LogCheckpoint returns the server's newest signed checkpoint (GET
// /api/admin/log/checkpoint), unchecked: OpenCheckpoint checks it.
// flagadmin.ErrNotFound when the server signs none.
func (c *Client) LogCheckpoint(ctx context.Context) ([]byte, error) {
	resp, body, err := c.do(ctx, request{method: http.MethodGet, url: c.endpoint(logCheckpointPath, nil), accept: "text/plain, application/json", retry: retrySafe})
	if err != nil {
		return nil, err
	}
	if err := requireMediaType(resp, "log checkpoint", func(mt string) bool { return mt == "text/plain" }); err != nil {
		return nil, err
	}
	return body, nil
}

// LogInclusionProof returns the proof that event id is in the tree of size
// events (GET /api/admin/log/proof). VerifyEvent checks one.
func (c *Client) LogInclusionProof(ctx context.Context, id, size int64) (vlog.InclusionProof, error) {
	q := url.Values{"id": {strconv.FormatInt(id, 10)}, "size": {strconv.FormatInt(size, 10)}}
	var wire struct {
		ID        int64    `json:"id"`
		LeafIndex int64    `json:"leafIndex"`
		TreeSize  int64    `json:"treeSize"`
		LeafHash  []byte   `json:"leafHash"`
		Salt      []byte   `json:"salt"`
		Hashes    [][]byte `json:"hashes"`
	}
	if err := c.getJSON(ctx, logProofPath, q, "log inclusion proof", &wire); err != nil {
		return vlog.InclusionProof{}, err
	}
	return vlog.InclusionProof{EventID: wire.ID, LeafIndex: wire.LeafIndex, TreeSize: wire.TreeSize, LeafHash: wire.LeafHash, Salt: wire.Salt, Hashes: wire.Hashes}, nil
}

// LogConsistencyProof returns the proof that the tree of from events is a
// prefix of the tree of to events (GET /api/admin/log/consistency).
// VerifyConsistency checks one.
func (c *Client) LogConsistencyProof(ctx context.Context, from, to int64) (vlog.ConsistencyProof, error) {
	q := url.Values{"from": {strconv.FormatInt(from, 10)}, "to": {strconv.FormatInt(to, 10)}}
	var wire struct {
		From   int64    `json:"from"`
		To     int64    `json:"to"`
		Hashes [][]byte `json:"hashes"`
	}
	if err := c.getJSON(ctx, logConsistencyPath, q, "log consistency proof", &wire); err != nil {
		return vlog.ConsistencyProof{}, err
	}
	return vlog.ConsistencyProof{From: wire.From, To: wire.To, Hashes: wire.Hashes}, nil
}

// LogLeaves returns at most count leaves from index start on (GET
// /api/admin/log/leaves; count 1 to vlog.LeavesMaxCount), with the
// log's size. It needs an admin token or a root Admin's.
func (c *Client) LogLeaves(ctx context.Context, start int64, count int) (vlog.LeafPage, error) {
	q := url.Values{"start": {strconv.FormatInt(start, 10)}, "count": {strconv.Itoa(count)}}
	var wire struct {
		TreeSize int64 `json:"treeSize"`
		Start    int64 `json:"start"`
		Leaves   []struct {
			Index     int64     `json:"index"`
			ID        int64     `json:"id"`
			Hash      []byte    `json:"hash"`
			Pruned    bool      `json:"pruned"`
			CreatedAt time.Time `json:"createdAt"`
			Project   *string   `json:"project"`
			Type      string    `json:"type"`
			Content   []byte    `json:"content"`
			Salt      []byte    `json:"salt"`
		} `json:"leaves"`
	}
	if err := c.getJSON(ctx, logLeavesPath, q, "log leaves", &wire); err != nil {
		return vlog.LeafPage{}, err
	}
	page := vlog.LeafPage{TreeSize: wire.TreeSize, Start: wire.Start, Leaves: make([]vlog.Leaf, len(wire.Leaves))}
	for i, l := range wire.Leaves {
		if len(l.Hash) != 32 || len(l.Content) != 32 {
			return vlog.LeafPage{}, fmt.Errorf("client: log leaves: leaf %d has a hash of %d bytes and a content of %d, want 32 each", l.Index, len(l.Hash), len(l.Content))
		}
		page.Leaves[i] = vlog.Leaf{Index: l.Index, EventID: l.ID, Hash: [32]byte(l.Hash), Pruned: l.Pruned,
			CreatedAt: l.CreatedAt.UTC(), Project: l.Project, Type: l.Type, Content: [32]byte(l.Content), Salt: l.Salt}
	}
	return page, nil
}

// getJSON reads the JSON answer of a GET into v.
func (c *Client) getJSON(ctx context.Context, path string, q url.Values, what string, v any) error {
	resp, body, err := c.do(ctx, request{method: http.MethodGet, url: c.endpoint(path, q), accept: "application/json", retry: retrySafe})
	if err != nil {
		return err
	}
	if err := requireJSON(resp, what); err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("client: %s: decode the response: %w", what, err)
	}
	return nil
}

// VerifyEvent checks that ev, as the caller holds it (from a search, an
// export, a stream or a webhook), is in the log a signed checkpoint
// commits to, unchanged: it asks the server for the event's inclusion
// proof in the tree of the checkpoint's size, which carries the event's
// salt, computes the event's leaf hash with that salt
// (leaf.LeafHash), and checks the proof against the checkpoint's
// root with the Merkle library's verifier. (The server chooses nothing
// by giving the salt: a leaf commits to it, and another salt giving the
// same leaf for a changed event would break SHA-256.) checkpoint is a
// note the caller holds, or nil for the server's newest; v checks its
// signature. It returns the checkpoint it checked against. An event that
// does not verify is an error wrapping ErrNotProven; the server's errors
// are returned as they are (a 404 for an event the caller may not see).
func (c *Client) VerifyEvent(ctx context.Context, ev flagadmin.Event, checkpoint []byte, v note.Verifier) (Checkpoint, error) {
	if checkpoint == nil {
		var err error
		if checkpoint, err = c.LogCheckpoint(ctx); err != nil {
			return Checkpoint{}, err
		}
	}
	cp, err := OpenCheckpoint(checkpoint, v)
	if err != nil {
		return Checkpoint{}, err
	}
	if _, err := leaf.EventContent(ev); err != nil {
		return cp, fmt.Errorf("client: event %d: %w", ev.ID, err)
	}
	p, err := c.LogInclusionProof(ctx, ev.ID, cp.Size)
	if err != nil {
		return cp, err
	}
	if p.EventID != ev.ID || p.TreeSize != cp.Size {
		return cp, fmt.Errorf("client: event %d: %w: the server answered the proof of event %d in a tree of %d", ev.ID, ErrNotProven, p.EventID, p.TreeSize)
	}
	ev.Salt = p.Salt
	leaf, err := leaf.LeafHash(ev)
	if err != nil {
		return cp, fmt.Errorf("client: event %d: %w: the server's salt: %v", ev.ID, ErrNotProven, err)
	}
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(p.LeafIndex), uint64(cp.Size), leaf[:], p.Hashes, cp.Root[:]); err != nil {
		return cp, fmt.Errorf("client: event %d: %w: it is not in the log of %s as the checkpoint of %d events signs it: %v", ev.ID, ErrNotProven, cp.Origin, cp.Size, err)
	}
	return cp, nil
}

// VerifyConsistency checks that the log only grew from the checkpoint
// older to the checkpoint newer (both notes, checked with v): it asks the
// server for the consistency proof between their sizes and checks it
// against both roots. A log that was rewritten in between is an error
// wrapping ErrNotProven.
func (c *Client) VerifyConsistency(ctx context.Context, older, newer []byte, v note.Verifier) error {
	a, err := OpenCheckpoint(older, v)
	if err != nil {
		return err
	}
	b, err := OpenCheckpoint(newer, v)
	if err != nil {
		return err
	}
	if a.Size > b.Size {
		return fmt.Errorf("client: %w: the newer checkpoint covers %d events, fewer than the older's %d", ErrNotProven, b.Size, a.Size)
	}
	if a.Size == 0 || a.Size == b.Size {
		if a.Size == b.Size && !bytes.Equal(a.Root[:], b.Root[:]) {
			return fmt.Errorf("client: %w: two checkpoints of %d events with different roots", ErrNotProven, a.Size)
		}
		return nil
	}
	p, err := c.LogConsistencyProof(ctx, a.Size, b.Size)
	if err != nil {
		return err
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, uint64(a.Size), uint64(b.Size), p.Hashes, a.Root[:], b.Root[:]); err != nil {
		return fmt.Errorf("client: %w: the log of %d events is not an extension of the log of %d: %v", ErrNotProven, b.Size, a.Size, err)
	}
	return nil
}
