package httpapi

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// The verifiable log (docs/verifiable-log.md): the newest signed checkpoint,
// inclusion and consistency proofs, and the leaves "flagadmin log verify"
// reads. Hashes are base64 (standard encoding) in JSON bodies.

const tagLog = "Log"

type logCheckpointInput struct{}

type logCheckpointOutput struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

// logProofInput are the query parameters of GET /api/admin/log/proof; the
// domain validates them, naming each.
type logProofInput struct {
	ID   string `query:"id" required:"true" minLength:"1" doc:"The id of the event: an integer of 1 or more. An event the caller may not see, a pruned one and a missing one are all a 404." example:"42"`
	Size string `query:"size" required:"true" minLength:"1" doc:"The size of the tree to prove the event is in, such as the size of a checkpoint the caller holds: an integer from the event's leaf index + 1 to the log's size." example:"1000"`
}

// logProofSchema is the body of an inclusion proof.
type logProofSchema struct {
	ID        int64    `json:"id" doc:"The event's id."`
	LeafIndex int64    `json:"leafIndex" minimum:"0" doc:"The index of the event's leaf: its position in id order, from 0."`
	TreeSize  int64    `json:"treeSize" minimum:"1" doc:"The size of the tree the proof is for (the size parameter)."`
	LeafHash  []byte   `json:"leafHash" doc:"The leaf hash recorded for the event, base64: leaf format v1 (docs/verifiable-log.md) of the event's id, createdAt, project and type and of SHA-256 of its salt and its JSON without the id in RFC 8785 canonical form. A verifier computes it from the event it holds and the salt."`
	Salt      []byte   `json:"salt" doc:"The event's salt, 16 random bytes drawn when it was written, base64: with it the caller computes the leaf of the event it holds. Given only to callers who may see the event; without it a leaf hash tells nothing about the event's content."`
	Hashes    [][]byte `json:"hashes" nullable:"false" doc:"The inclusion path of RFC 9162 section 2.1.3, base64, from the leaf's sibling up."`
}

type logProofOutput struct {
	Body logProofSchema
}

type logConsistencyInput struct {
	From string `query:"from" required:"true" minLength:"1" doc:"The smaller tree size, such as that of a checkpoint saved earlier: an integer of 1 or more." example:"500"`
	To   string `query:"to" required:"true" minLength:"1" doc:"The larger tree size, such as that of the newest checkpoint: from from to the log's size." example:"1000"`
}

// logConsistencySchema is the body of a consistency proof.
type logConsistencySchema struct {
	From   int64    `json:"from" doc:"The smaller tree size."`
	To     int64    `json:"to" doc:"The larger tree size."`
	Hashes [][]byte `json:"hashes" nullable:"false" doc:"The consistency path of RFC 9162 section 2.1.4, base64; empty when from equals to."`
}

type logConsistencyOutput struct {
	Body logConsistencySchema
}

type logLeavesInput struct {
	Start string `query:"start" minLength:"1" doc:"The index of the first leaf: an integer of 0 or more; default 0." example:"0"`
	Count string `query:"count" minLength:"1" doc:"How many leaves: an integer from 1 to 10000; default 1000." example:"1000"`
}

// logLeafSchema is one leaf: its hash, what the hash commits to (kept
// when the event is pruned: a tombstone) and, while the event is kept,
// its salt.
type logLeafSchema struct {
	Index     int64   `json:"index" minimum:"0" doc:"The leaf's index."`
	ID        int64   `json:"id" doc:"The id of the leaf's event."`
	Hash      []byte  `json:"hash" doc:"The leaf hash recorded when the event was written, base64: leaf format v1 of id, createdAt, project, type and content (docs/verifiable-log.md)."`
	Pruned    bool    `json:"pruned" doc:"The event was removed by retention: its leaf stays, with what its hash commits to, without its salt."`
	CreatedAt string  `json:"createdAt" format:"date-time" doc:"The event's createdAt, as the event shows it: RFC 3339 in UTC with milliseconds." example:"2025-01-02T03:04:05.000Z"`
	Project   *string `json:"project" nullable:"true" doc:"The event's project; null for an event without one."`
	Type      string  `json:"type" doc:"The event's type."`
	Content   []byte  `json:"content" doc:"The event's content commitment, base64: SHA-256 of its salt and its JSON without the id in RFC 8785 canonical form (32 bytes)."`
	Salt      []byte  `json:"salt,omitempty" doc:"The event's salt, base64 (16 bytes); absent once the event is pruned."`
}

// logLeavesSchema is the body of GET /api/admin/log/leaves.
type logLeavesSchema struct {
	TreeSize int64           `json:"treeSize" minimum:"0" doc:"The log's size when read: the number of leaves."`
	Start    int64           `json:"start" minimum:"0" doc:"The index of the first leaf asked for."`
	Leaves   []logLeafSchema `json:"leaves" nullable:"false" doc:"The leaves from start on, index ascending; fewer than count at the end of the log, none past it."`
}

type logLeavesOutput struct {
	Body logLeavesSchema
}

func (s *Server) registerLog() {
	checkpoint := s.operation("getLogCheckpoint", http.MethodGet, "/api/admin/log/checkpoint", tagLog,
		"Get the newest signed checkpoint",
		"Returns the newest signed checkpoint of the event log: a signed note in the C2SP tlog-checkpoint "+
			"format (the origin line, the number of events, the base64 root hash of the RFC 9162 Merkle tree "+
			"of the events, a blank line, then an Ed25519 signature line). The server signs one at least every "+
			"10 seconds while the log grows. Any admin-API principal may read it: it reveals only the number "+
			"of events. A server started without a signing key (--log-key) has none: 404. A server that found "+
			"the log no longer extends the last checkpoint it signed (rewritten, or an older copy of the "+
			"database put back) refuses to sign and answers 409 saying why.",
		"The checkpoint, as text.",
		http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict, http.StatusInternalServerError, http.StatusServiceUnavailable)
	checkpoint.Responses["200"].Content = map[string]*huma.MediaType{"text/plain": {Schema: &huma.Schema{Type: huma.TypeString,
		Examples: []any{"flagadmin.example.com/log\n1000\nRa0nGgSHkWAjX4gVPaVdRy0UbTMVhNyiHZ9gEJNvd+Y=\n\n— flagadmin.example.com/log Az3grj1s…\n"}}}}
	register(s, checkpoint, s.logCheckpoint)

	inclusion := s.operation("getLogInclusionProof", http.MethodGet, "/api/admin/log/proof", tagLog,
		"Prove that an event is in the log",
		"Returns the index of the event's leaf, its salt and its inclusion path in the tree of the given "+
			"size (RFC 9162 section 2.1.3): with a checkpoint of that size, a client computes the leaf of the "+
			"event it holds with the salt and checks that it was recorded, unchanged, in the log the checkpoint "+
			"signs. Only for an event the caller may see (as in the search): others are a 404, like missing "+
			"or pruned ones.",
		"The inclusion proof.",
		http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusInternalServerError, http.StatusServiceUnavailable)
	inclusion.SkipValidateParams = true // the domain validates, naming each parameter
	register(s, inclusion, s.logInclusionProof)

	consistency := s.operation("getLogConsistencyProof", http.MethodGet, "/api/admin/log/consistency", tagLog,
		"Prove that the log only grew",
		"Returns the consistency path from the tree of from events to the tree of to events (RFC 9162 "+
			"section 2.1.4): with a checkpoint saved earlier and the newest one, a client checks that the log "+
			"was only appended to in between. Any admin-API principal: it reveals only hashes.",
		"The consistency proof.",
		http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusInternalServerError, http.StatusServiceUnavailable)
	consistency.SkipValidateParams = true
	register(s, consistency, s.logConsistencyProof)

	leaves := s.operation("getLogLeaves", http.MethodGet, "/api/admin/log/leaves", tagLog,
		"Read the log's leaves",
		"Returns a run of the log's leaves, each with its event's id, the leaf hash recorded when the event "+
			"was written, what the hash commits to (the event's createdAt, project and type, and its content "+
			"commitment), the event's salt, and whether retention pruned the event (its leaf stays, with all "+
			"but the salt). flagadmin log verify reads them beside the export to recompute the tree and name "+
			"any event changed, removed, inserted or reordered. Needs the ADMIN permission (leaves name every "+
			"event's id and give every salt).",
		"The leaves.",
		http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusInternalServerError, http.StatusServiceUnavailable)
	leaves.SkipValidateParams = true
	register(s, leaves, s.logLeaves)
}

func (s *Server) logCheckpoint(ctx context.Context, _ *logCheckpointInput) (*logCheckpointOutput, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.vlog.Checkpoint(ctx, p)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &logCheckpointOutput{ContentType: "text/plain; charset=utf-8", Body: c.Note}, nil
}

func (s *Server) logInclusionProof(ctx context.Context, in *logProofInput) (*logProofOutput, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	pr, err := s.vlog.InclusionProof(ctx, p, vlog.ProofParams{ID: in.ID, Size: in.Size})
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &logProofOutput{Body: logProofSchema{ID: pr.EventID, LeafIndex: pr.LeafIndex, TreeSize: pr.TreeSize, LeafHash: pr.LeafHash, Salt: pr.Salt, Hashes: pr.Hashes}}, nil
}

func (s *Server) logConsistencyProof(ctx context.Context, in *logConsistencyInput) (*logConsistencyOutput, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	pr, err := s.vlog.ConsistencyProof(ctx, p, vlog.ConsistencyParams{From: in.From, To: in.To})
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &logConsistencyOutput{Body: logConsistencySchema{From: pr.From, To: pr.To, Hashes: pr.Hashes}}, nil
}

func (s *Server) logLeaves(ctx context.Context, in *logLeavesInput) (*logLeavesOutput, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	page, err := s.vlog.Leaves(ctx, p, vlog.LeavesParams{Start: in.Start, Count: in.Count})
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	out := logLeavesSchema{TreeSize: page.TreeSize, Start: page.Start, Leaves: make([]logLeafSchema, len(page.Leaves))}
	for i, l := range page.Leaves {
		out.Leaves[i] = logLeafSchema{Index: l.Index, ID: l.EventID, Hash: l.Hash[:], Pruned: l.Pruned,
			CreatedAt: flagadmin.Truncate(l.CreatedAt).Format(flagadmin.TimeLayout), Project: l.Project, Type: l.Type, Content: l.Content[:], Salt: l.Salt}
	}
	return &logLeavesOutput{Body: out}, nil
}
