package vlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Service performs the log's operations of the admin API for a
// Principal: the signed checkpoint, the inclusion and consistency proofs,
// the leaves, the legal holds and the retention rule. It is built over the
// domain's Service, which keeps the rules the log's operations share with
// every other: each operation passes the domain's permission gate
// (flagadmin.Service.Authorize) once, first; an inclusion proof is given
// only for an event the caller may see in a search
// (flagadmin.Service.VisibleQuery, SearchVisible); and holds and the
// retention rule, which write events, are refused on a read-only copy
// (flagadmin.Service.CheckWritable). It is safe for concurrent use.
type Service struct {
	core *flagadmin.Service
	log  Config
}

// Config is the verifiable log a Service serves. The zero Config is a
// server that keeps none: every operation answers flagadmin.ErrNotFound
// (after the gate).
type Config struct {
	// Store keeps the tree: the store the domain's Service writes through,
	// or the one under its caches.
	Store Store
	// Prover computes proofs over Store.
	Prover Prover
	// Signing: the server signs checkpoints (it has a key). Without it
	// the checkpoint answers flagadmin.ErrNotFound saying how to configure
	// one.
	Signing bool
	// Refused, when not nil, says why the server stopped signing (nil
	// while it signs): the log no longer extends a checkpoint it signed.
	// The checkpoint then answers a *RefusedError.
	Refused func() error
	// Cosign, when not nil, returns a checkpoint with the cosignatures
	// the server holds of it from witnesses added to its note; the
	// checkpoint is served so.
	Cosign func(Checkpoint) Checkpoint
}

// NewService returns the log's operations over core, serving the log of
// cfg (docs/verifiable-log.md).
func NewService(core *flagadmin.Service, cfg Config) *Service {
	return &Service{core: core, log: cfg}
}

// The accesses the log's operations need (flagadmin.Service.Authorize).
var (
	adminAPI  = flagadmin.Access{Need: flagadmin.NeedAdminAPI}
	rootAdmin = flagadmin.Access{Need: flagadmin.NeedRootAdmin}
)

// RefusedError is the answer of Service.Checkpoint while the server refuses
// to sign: the log in its store does not extend a checkpoint it signed
// (rewritten, or an older copy of the database put back). It is of kind
// flagadmin.ErrConflict.
type RefusedError struct {
	// Problem says what the server found.
	Problem string
}

func (e *RefusedError) Error() string {
	return "This server refuses to sign the log's checkpoints: " + e.Problem
}

func (e *RefusedError) Unwrap() error { return flagadmin.ErrConflict }

// LeavesMaxCount bounds the leaves one Service.Leaves call returns.
const LeavesMaxCount = 10000

// LeavesDefaultCount is the count of Service.Leaves when none is given.
const LeavesDefaultCount = 1000

// InclusionProof proves that an event's leaf is in the tree of a size
// (RFC 9162 §2.1.3).
type InclusionProof struct {
	// EventID is the event's id.
	EventID int64
	// LeafIndex is its leaf's index.
	LeafIndex int64
	// TreeSize is the size of the tree the proof is for.
	TreeSize int64
	// LeafHash is the leaf's hash as stored (a verifier computes its own,
	// LeafHash of the event it holds with Salt).
	LeafHash []byte
	// Salt is the event's salt (adapters/tlog/leaf), which the caller needs to
	// compute the leaf of the event it sees.
	Salt []byte
	// Hashes is the inclusion path, from the leaf's sibling up.
	Hashes [][]byte
}

// ConsistencyProof proves that the tree of From leaves is a prefix of the
// tree of To leaves (RFC 9162 §2.1.4).
type ConsistencyProof struct {
	From, To int64
	// Hashes is the consistency path.
	Hashes [][]byte
}

// LeafPage is a run of leaves with the size of the log when read.
type LeafPage struct {
	// TreeSize is the log's size: the number of leaves.
	TreeSize int64
	// Start is the index of the first leaf asked for.
	Start int64
	// Leaves are the leaves from Start on, index ascending.
	Leaves []Leaf
}

// ProofParams are the raw query parameters of an inclusion proof (GET
// /api/admin/log/proof).
type ProofParams struct {
	// ID is the event's id: an integer of 1 or more.
	ID string
	// Size is the size of the tree to prove inclusion in, such as a
	// checkpoint's: an integer of 1 or more, at most the log's size.
	Size string
}

// ConsistencyParams are the raw query parameters of a consistency
// proof (GET /api/admin/log/consistency).
type ConsistencyParams struct {
	// From and To are tree sizes, 1 <= From <= To <= the log's size.
	From, To string
}

// LeavesParams are the raw query parameters of GET /api/admin/log/leaves.
type LeavesParams struct {
	// Start is the index of the first leaf: an integer of 0 or more
	// (default 0).
	Start string
	// Count is how many leaves: 1 to LeavesMaxCount (default
	// LeavesDefaultCount).
	Count string
}

// logConfigured returns the log's store, or the error of a Service
// without one (or without its prover, when proofs need it).
func (s *Service) logConfigured(proofs bool) (Store, error) {
	if s.log.Store == nil || proofs && s.log.Prover == nil {
		return nil, notFound("This server keeps no verifiable log: its store does not keep one.")
	}
	return s.log.Store, nil
}

// Checkpoint returns the newest signed checkpoint (GET
// /api/admin/log/checkpoint), with the witnesses' cosignatures the server
// holds of it: any admin-API principal may read it, as it reveals only the
// number of events. flagadmin.ErrNotFound, saying how to configure a key,
// when the server does not sign; flagadmin.ErrNotFound too before the
// first checkpoint is signed.
func (s *Service) Checkpoint(ctx context.Context, p flagadmin.Principal) (Checkpoint, error) {
	if err := s.core.Authorize(ctx, p, adminAPI); err != nil {
		return Checkpoint{}, err
	}
	ls, err := s.logConfigured(false)
	if err != nil {
		return Checkpoint{}, err
	}
	if !s.log.Signing {
		return Checkpoint{}, notFound("This server signs no checkpoints: start it with --log-key FILE " +
			"(or FLAGADMIN_LOG_KEY), a key written by \"flagadmin log keygen --out FILE\".")
	}
	if s.log.Refused != nil {
		if err := s.log.Refused(); err != nil {
			return Checkpoint{}, &RefusedError{Problem: err.Error()}
		}
	}
	c, err := ls.LatestCheckpoint(ctx)
	if errors.Is(err, flagadmin.ErrNotFound) {
		return Checkpoint{}, notFound("No checkpoint has been signed yet: the server signs one within 10 seconds of starting.")
	}
	if err == nil && s.log.Cosign != nil {
		c = s.log.Cosign(c)
	}
	return c, err
}

// InclusionProof returns the inclusion proof of an event in the tree of
// a size (GET /api/admin/log/proof), for an event the caller may see
// (as in a search): one it may not see, a pruned one and a missing one are
// all flagadmin.ErrNotFound. id and size are validated by name
// (flagadmin.ErrValidation).
func (s *Service) InclusionProof(ctx context.Context, p flagadmin.Principal, params ProofParams) (InclusionProof, error) {
	if err := s.core.Authorize(ctx, p, adminAPI); err != nil {
		return InclusionProof{}, err
	}
	id, idErr := parseInt("id", params.ID, 1)
	size, sizeErr := parseInt("size", params.Size, 1)
	if v := joinFields(idErr, sizeErr); len(v.Fields) > 0 {
		return InclusionProof{}, v
	}
	ls, err := s.logConfigured(true)
	if err != nil {
		return InclusionProof{}, err
	}
	a, err := s.readInclusion(ctx, ls, p, id, size)
	if err != nil {
		return InclusionProof{}, err
	}
	switch {
	case !a.Visible:
		return InclusionProof{}, notFound("There is no event %d that you can see (it may have been pruned).", id)
	case a.Leaf == nil:
		return InclusionProof{}, notFound("Event %d has no leaf in the log.", id)
	case size > a.LogSize:
		return InclusionProof{}, treeTooLarge("size", a.LogSize, size)
	case size <= a.Leaf.Index:
		return InclusionProof{}, invalid("size", "event %d is leaf %d, so it is only in trees of size %d or more", id, a.Leaf.Index, a.Leaf.Index+1)
	case a.Leaf.EventID != id:
		return InclusionProof{}, fmt.Errorf("log: leaf %d does not hold event %d", a.Leaf.Index, id)
	case a.Hashes == nil:
		return InclusionProof{}, fmt.Errorf("log: no inclusion path of leaf %d in the tree of size %d", a.Leaf.Index, size)
	}
	// The caller may see the event (a.Visible): it gets the salt, with
	// which it computes the leaf of the event it sees.
	leaf := a.Leaf.Hash
	return InclusionProof{EventID: id, LeafIndex: a.Leaf.Index, TreeSize: size, LeafHash: leaf[:], Salt: a.Leaf.Salt, Hashes: a.Hashes}, nil
}

// readInclusion reads what an inclusion proof of event id in the tree of
// size leaves needs, for principal p: in one read of the store when the
// prover can (ReadProver), else step by step. The caller checks the
// answer.
func (s *Service) readInclusion(ctx context.Context, ls Store, p flagadmin.Principal, id, size int64) (ProofAnswer, error) {
	if rp, ok := s.log.Prover.(ReadProver); ok {
		q, none, err := s.core.VisibleQuery(ctx, p, flagadmin.EventQuery{IDs: []int64{id}, Limit: 1})
		if err != nil || none {
			return ProofAnswer{}, err
		}
		a, err := rp.EventInclusionProof(ctx, q, size)
		if !errors.Is(err, errors.ErrUnsupported) {
			return a, err
		}
	}
	page, err := s.core.SearchVisible(ctx, p, flagadmin.EventQuery{IDs: []int64{id}, Limit: 1})
	if err != nil || len(page.Events) == 0 {
		return ProofAnswer{}, err
	}
	a := ProofAnswer{Visible: true}
	index, err := ls.LeafIndex(ctx, id)
	if errors.Is(err, flagadmin.ErrNotFound) {
		return a, nil
	}
	if err != nil {
		return ProofAnswer{}, err
	}
	if a.LogSize, err = ls.LogSize(ctx); err != nil {
		return ProofAnswer{}, err
	}
	if size > a.LogSize || size <= index {
		a.Leaf = &Leaf{Index: index, EventID: id}
		return a, nil
	}
	leaves, err := ls.LogLeaves(ctx, index, index+1)
	if err != nil {
		return ProofAnswer{}, err
	}
	if len(leaves) != 1 {
		return ProofAnswer{}, fmt.Errorf("log: leaf %d of event %d is missing", index, id)
	}
	a.Leaf = &leaves[0]
	if a.Hashes, err = s.log.Prover.InclusionProof(ctx, index, size); err != nil {
		return ProofAnswer{}, err
	}
	return a, nil
}

// ConsistencyProof returns the consistency proof between two tree
// sizes (GET /api/admin/log/consistency): any admin-API principal, as it
// reveals only hashes.
func (s *Service) ConsistencyProof(ctx context.Context, p flagadmin.Principal, params ConsistencyParams) (ConsistencyProof, error) {
	if err := s.core.Authorize(ctx, p, adminAPI); err != nil {
		return ConsistencyProof{}, err
	}
	from, fromErr := parseInt("from", params.From, 1)
	to, toErr := parseInt("to", params.To, 1)
	v := joinFields(fromErr, toErr)
	if len(v.Fields) == 0 && from > to {
		v.Fields = append(v.Fields, flagadmin.FieldError{Path: "from", Message: fmt.Sprintf("must be at most to (%d), got %d", to, from)})
	}
	if len(v.Fields) > 0 {
		return ConsistencyProof{}, v
	}
	ls, err := s.logConfigured(true)
	if err != nil {
		return ConsistencyProof{}, err
	}
	a, err := s.readConsistency(ctx, ls, from, to)
	if err != nil {
		return ConsistencyProof{}, err
	}
	if to > a.LogSize {
		return ConsistencyProof{}, treeTooLarge("to", a.LogSize, to)
	}
	if a.Hashes == nil {
		return ConsistencyProof{}, fmt.Errorf("log: no consistency path from size %d to size %d", from, to)
	}
	return ConsistencyProof{From: from, To: to, Hashes: a.Hashes}, nil
}

// readConsistency reads the log's size and, when to is within it, the
// consistency path from from to to: in one read of the store when the
// prover can (ReadProver), else in two.
func (s *Service) readConsistency(ctx context.Context, ls Store, from, to int64) (ProofAnswer, error) {
	if rp, ok := s.log.Prover.(ReadProver); ok {
		a, err := rp.CheckedConsistencyProof(ctx, from, to)
		if !errors.Is(err, errors.ErrUnsupported) {
			return a, err
		}
	}
	var a ProofAnswer
	var err error
	if a.LogSize, err = ls.LogSize(ctx); err != nil || to > a.LogSize {
		return a, err
	}
	a.Hashes, err = s.log.Prover.ConsistencyProof(ctx, from, to)
	return a, err
}

// Leaves returns a run of leaves (GET /api/admin/log/leaves): what
// "flagadmin log verify" compares the events with, pruned leaves included.
// A leaf names its event's id whoever's it is, so it needs the ADMIN
// permission.
func (s *Service) Leaves(ctx context.Context, p flagadmin.Principal, params LeavesParams) (LeafPage, error) {
	if err := s.core.Authorize(ctx, p, rootAdmin); err != nil {
		return LeafPage{}, err
	}
	v := &flagadmin.ValidationError{}
	start, count := int64(0), int64(LeavesDefaultCount)
	if params.Start != "" {
		n, e := parseInt("start", params.Start, 0)
		if e != nil {
			v.Fields = append(v.Fields, e.Fields...)
		}
		start = n
	}
	if params.Count != "" {
		n, e := parseInt("count", params.Count, 1)
		switch {
		case e != nil:
			v.Fields = append(v.Fields, e.Fields...)
		case n > LeavesMaxCount:
			v.Fields = append(v.Fields, flagadmin.FieldError{Path: "count", Message: fmt.Sprintf("must be an integer from 1 to %d, got %d", LeavesMaxCount, n)})
		}
		count = n
	}
	if len(v.Fields) > 0 {
		return LeafPage{}, v
	}
	ls, err := s.logConfigured(false)
	if err != nil {
		return LeafPage{}, err
	}
	size, err := ls.LogSize(ctx)
	if err != nil {
		return LeafPage{}, err
	}
	page := LeafPage{TreeSize: size, Start: start, Leaves: []Leaf{}}
	if start >= size {
		return page, nil
	}
	leaves, err := ls.LogLeaves(ctx, start, min(start+count, size))
	if err != nil {
		return LeafPage{}, err
	}
	if leaves != nil {
		page.Leaves = leaves
	}
	return page, nil
}

// treeTooLarge refuses a tree size larger than the log's, naming param.
func treeTooLarge(param string, logSize, size int64) error {
	return invalid(param, "must be at most the log's size, %d, got %d", logSize, size)
}

// parseInt parses a required decimal integer of at least lowest.
func parseInt(param, raw string, lowest int64) (int64, *flagadmin.ValidationError) {
	if raw == "" {
		return 0, invalid(param, "is required")
	}
	bad := invalid(param, "must be an integer of %d or more, got %s", lowest, flagadmin.QuoteInput(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return 0, bad
		}
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < lowest {
		return 0, bad
	}
	return n, nil
}
