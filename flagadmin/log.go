package flagadmin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The verifiable log (docs/verifiable-log.md): the events form an append-only
// Merkle tree as RFC 9162 (Certificate Transparency 2.0) defines it. Leaf
// n is the n-th event in id order, from 0, whatever the gaps in ids; its
// hash is adapters/tlog/leaf's LeafHash. Stores keep the leaves as they write events
// (LogStore); the tree's interior hashes, proofs and signed checkpoints
// are computed by an adapter (adapters/tlog) through the ports of this
// file, so the domain needs neither a Merkle library nor a signature
// scheme.

// LogLeaf is one leaf of the log's tree as a store keeps it: its hash,
// and what the hash commits to (adapters/tlog/leaf), kept when the event is pruned,
// so that the hash can be recomputed (LeafOf) and the removal checked
// against the retention the log records.
type LogLeaf struct {
	// Index is the leaf's position: 0 for the first event ever written.
	Index int64
	// EventID is the id of the leaf's event.
	EventID int64
	// Hash is the event's LeafHash, computed when it was written.
	Hash [32]byte
	// Pruned: the event was removed by retention (PruneEvents); the leaf,
	// its hash and what it commits to stay (a tombstone).
	Pruned bool
	// CreatedAt, Project and Type are the event's: what retention decides
	// on, committed apart from the rest of the event.
	CreatedAt time.Time
	Project   *string
	Type      string
	// Content is the event's ContentCommitment.
	Content [32]byte
	// Salt is the event's salt; nil once the event is pruned. It is given
	// only to callers who may see the event.
	Salt []byte
}

// LogHashRange names consecutive hashes of one level of the tree: the
// roots of the perfect subtrees of 2^Level leaves with indexes Start to
// End-1 at that level (the subtree of index i covers the leaves i·2^Level
// to (i+1)·2^Level - 1). Level 0 is the leaves themselves.
type LogHashRange struct {
	Level      int
	Start, End int64
}

// Checkpoint is a signed statement of the log's size and root hash: a
// note in the C2SP tlog-checkpoint format (an origin line, the tree size,
// the base64 root hash, then the signature lines).
type Checkpoint struct {
	// Size is the number of leaves the checkpoint covers.
	Size int64
	// Root is the root hash of the tree of Size leaves.
	Root [32]byte
	// Note is the signed note, as served (text/plain).
	Note []byte
	// SignedAt is when it was signed.
	SignedAt time.Time
}

// LogHold is a legal hold (flagadmin log hold): the events of Project are
// never pruned while it lasts.
type LogHold struct {
	Project string
	// Since is when the hold was placed.
	Since time.Time
}

// LogStore is the storage of the verifiable log and its retention: a
// Store that keeps it implements this too. adapters/memstore does;
// internal/storetest holds every implementation to the same contract.
//
// Leaves: each event a store writes (Write, UpdateFeature, DeleteUser,
// DeleteToken, and bulk loads and imports) gets its leaf in the same
// transaction, in id order, with the next index (consecutive from 0,
// whatever the gaps in ids) and the hash LeafHash gives for the event as
// stored, its id included. A write that fails appends nothing; concurrent
// writers append one tree (the lock that makes events commit in id order
// serializes them). Leaves are never changed or removed: pruning
// marks them (LogLeaf.Pruned).
//
// Stored subtree hashes (levels above 0) only speed proofs up: they are
// saved by the tree's maintenance (adapters/tlog), computed from the
// leaves, and never needed for correctness.
type LogStore interface {
	// LogSize returns the number of leaves: the events ever written,
	// pruned ones included.
	LogSize(ctx context.Context) (int64, error)
	// LogLeaves returns the leaves with indexes start to end-1, index
	// ascending; fewer when the log has fewer. The caller bounds end-start
	// (LogLeavesMaxCount over HTTP).
	LogLeaves(ctx context.Context, start, end int64) ([]LogLeaf, error)
	// LeafIndex returns the index of the leaf of event id; ErrNotFound
	// when no leaf holds that id.
	LeafIndex(ctx context.Context, eventID int64) (int64, error)
	// LogHashes returns, for each range, the hashes stored at its level
	// from its Start on, in order: at most End-Start of them, fewer when
	// the store holds fewer (level 0: the leaf hashes, below LogSize;
	// other levels: what SaveLogHashes stored). One call reads every
	// range (one round trip for a SQL store).
	LogHashes(ctx context.Context, ranges []LogHashRange) ([][][32]byte, error)
	// SaveLogHashes stores the hashes of perfect subtrees of level (1 or
	// more) with indexes from start on. start must be at most
	// LogHashCount(level): the stored hashes of a level are consecutive
	// from 0. A hash already stored is kept as it is (concurrent savers
	// compute the same hashes).
	SaveLogHashes(ctx context.Context, level int, start int64, hashes [][32]byte) error
	// LogHashCount returns how many hashes of level are stored,
	// consecutive from index 0; level 0 is LogSize.
	LogHashCount(ctx context.Context, level int) (int64, error)

	// SaveCheckpoint stores a signed checkpoint. LatestCheckpoint returns
	// the one of the largest size (of equal sizes, either).
	SaveCheckpoint(ctx context.Context, c Checkpoint) error
	// LatestCheckpoint returns the stored checkpoint of the largest size;
	// ErrNotFound when none is stored.
	LatestCheckpoint(ctx context.Context) (Checkpoint, error)

	// PruneEvents removes at most limit events by the retention rule the
	// log records, lowest ids first. In its transaction, serialized with
	// RecordRetention, HoldProject and ReleaseProject, it reads the newest
	// event of type EventRetentionChanged (nil when there is none) and
	// calls cutoff with it: the events created before the time cutoff
	// returns are removed, none when it returns the zero time (no
	// retention in force); an error of cutoff is returned as it is,
	// nothing removed. It never removes those of a held project
	// (HoldProject; an event without a project is never held) nor those
	// of the types retention records (IsRetentionEvent), and returns the
	// ids it removed, ascending. Their leaves stay, marked pruned, with
	// their hashes. The events leave searches, exports, stream replays
	// and totals in the same transaction, which raises the store's
	// version (a VersionedStore); the rule and the holds are read in that
	// transaction too, so a rule recorded or a hold placed before the
	// call returns applies to it. When it removes any, it calls record
	// with their ids in that transaction and appends the event record
	// returns (an events-pruned event), as Write appends events: the
	// batch and its event are stored together or not at all. An error of
	// record is returned as it is, nothing removed.
	PruneEvents(ctx context.Context, limit int, cutoff func(rule *Event) (time.Time, error), record func(ids []int64) (Event, error)) ([]int64, error)
	// HoldProject places a legal hold on the events of project, whether
	// or not such a project exists (events outlive their projects), and
	// appends e, in one transaction. When the project is held already it
	// keeps the first hold, writes nothing and returns ErrConflict.
	HoldProject(ctx context.Context, project string, since time.Time, e Event) error
	// ReleaseProject ends the hold on project and appends e, in one
	// transaction; ErrNotFound, and nothing written, when it has none.
	ReleaseProject(ctx context.Context, project string, e Event) error
	// RecordRetention reads the newest event of type EventRetentionChanged
	// and calls fn with it (nil when there is none); when fn returns an
	// event, it is appended in the same transaction. Of concurrent calls,
	// each reads what the ones before it appended: the read and the write
	// are serialized with each other (and with pruning and holds).
	RecordRetention(ctx context.Context, fn func(last *Event) (*Event, error)) error
	// LogHolds returns the holds, by project.
	LogHolds(ctx context.Context) ([]LogHold, error)
}

// LogProver computes what the tree answers from a LogStore's hashes: the
// proofs of RFC 9162 §2.1. adapters/tlog implements it (over stored
// subtree hashes, so a proof reads a few hundred hashes, not the log).
type LogProver interface {
	// InclusionProof returns the inclusion path of leaf index in the tree
	// of the first size leaves, 0 <= index < size <= the log's size.
	InclusionProof(ctx context.Context, index, size int64) ([][]byte, error)
	// ConsistencyProof returns the consistency path from the tree of the
	// first from leaves to the tree of the first to leaves, 0 < from <= to
	// <= the log's size.
	ConsistencyProof(ctx context.Context, from, to int64) ([][]byte, error)
}

// LogProofReader is a LogStore that reads what a proof needs in one read
// (one statement for a SQL store, so one snapshot): the log's size, an
// event's leaf with the check that the caller may see the event, and the
// stored hashes around that leaf, whose index the read itself finds. A
// LogProver over it (adapters/tlog) then answers a proof request in one
// read instead of one per step (LogReadProver).
type LogProofReader interface {
	// ReadLogProof reads what q names. It returns an error wrapping
	// errors.ErrUnsupported when the store is set not to (a speed-up
	// turned off): the caller then reads step by step.
	ReadLogProof(ctx context.Context, q LogProofQuery) (LogProofRows, error)
}

// LogProofQuery is what one LogProofReader read returns.
type LogProofQuery struct {
	// Event, when not nil, selects an event the way a search does: its IDs
	// hold the one event id; RequireProject and HiddenProjects are what
	// the caller's visibility, as in a search. Nil: no event is read, nor
	// Windows.
	Event *EventQuery
	// Windows name stored hashes around the leaf of the event, when it is
	// visible and has one.
	Windows []LogHashWindow
	// Ranges name stored hashes by position, as LogStore.LogHashes does.
	Ranges []LogHashRange
}

// LogHashWindow names the hashes of one level around a leaf of index i:
// the Width (a power of two) consecutive hashes of Level, aligned on
// Width, that hold i's ancestor at that level (the subtree of index
// i/2^Level), so from ⌊i / (2^Level·Width)⌋·Width on; only those with
// indexes below End.
type LogHashWindow struct {
	Level int
	Width int64
	End   int64
}

// LogHash is a stored hash of the tree: the root of the perfect subtree
// of 2^Level leaves of index Index at that level (level 0: a leaf's hash).
type LogHash struct {
	Level int
	Index int64
	Hash  [32]byte
}

// LogProofRows is what a LogProofReader read, all of it in one snapshot.
type LogProofRows struct {
	// Size is the log's size (LogStore.LogSize).
	Size int64
	// Visible: the query's Event selects a stored event.
	Visible bool
	// Leaf is the leaf of that event; nil when the event is not visible
	// or has no leaf.
	Leaf *LogLeaf
	// Hashes are the stored hashes of the query's windows and ranges, in
	// no particular order (one may come twice); those a level lacks are
	// missing.
	Hashes []LogHash
}

// LogReadProver is a LogProver that answers a proof request, the checks
// of the Service included, in one read of its store (a LogProofReader).
// The Service uses it when its prover is one, and proves step by step
// (search, LeafIndex, LogSize, LogLeaves, LogProver) when it answers an
// error wrapping errors.ErrUnsupported; both give the same answers.
type LogReadProver interface {
	// EventInclusionProof reads the event q selects (its id and what the
	// caller may see, as for a search), its leaf, the log's size and, when
	// the leaf's index is below size and size is at most the log's size,
	// the inclusion path of the leaf in the tree of size leaves.
	EventInclusionProof(ctx context.Context, q EventQuery, size int64) (LogProofAnswer, error)
	// CheckedConsistencyProof reads the log's size and, when to is at most
	// that size, the consistency path from the tree of from leaves to the
	// tree of to leaves, 0 < from <= to.
	CheckedConsistencyProof(ctx context.Context, from, to int64) (LogProofAnswer, error)
}

// LogProofAnswer is what a LogReadProver read and proved.
type LogProofAnswer struct {
	// LogSize is the log's size when read.
	LogSize int64
	// Visible and Leaf are LogProofRows': whether the event is visible,
	// and its leaf (an inclusion proof only).
	Visible bool
	Leaf    *LogLeaf
	// Hashes is the path; nil when the sizes asked for do not allow one.
	Hashes [][]byte
}

// LogConfig is the verifiable log a Service serves (WithLog).
type LogConfig struct {
	// Store keeps the tree: the store the Service writes through, or the
	// one under its caches.
	Store LogStore
	// Prover computes proofs over Store.
	Prover LogProver
	// Signing: the server signs checkpoints (it has a key). Without it
	// the checkpoint answers ErrNotFound saying how to configure one.
	Signing bool
	// Refused, when not nil, says why the server stopped signing (nil
	// while it signs): the log no longer extends a checkpoint it signed.
	// The checkpoint then answers a *LogRefusedError.
	Refused func() error
	// Cosign, when not nil, returns a checkpoint with the cosignatures
	// the server holds of it from witnesses added to its note; the
	// checkpoint is served so.
	Cosign func(Checkpoint) Checkpoint
}

// LogRefusedError is the answer of LogCheckpoint while the server refuses
// to sign: the log in its store does not extend a checkpoint it signed
// (rewritten, or an older copy of the database put back). It is of kind
// ErrConflict.
type LogRefusedError struct {
	// Problem says what the server found.
	Problem string
}

func (e *LogRefusedError) Error() string {
	return "This server refuses to sign the log's checkpoints: " + e.Problem
}

func (e *LogRefusedError) Unwrap() error { return ErrConflict }

// WithLog gives the Service the verifiable log (docs/verifiable-log.md). Without
// it, the log's operations answer ErrNotFound.
func WithLog(c LogConfig) Option { return func(s *Service) { s.log = c } }

// LogLeavesMaxCount bounds the leaves one LogLeaves call returns.
const LogLeavesMaxCount = 10000

// LogLeavesDefaultCount is the count of LogLeaves when none is given.
const LogLeavesDefaultCount = 1000

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

// LogLeafPage is a run of leaves with the size of the log when read.
type LogLeafPage struct {
	// TreeSize is the log's size: the number of leaves.
	TreeSize int64
	// Start is the index of the first leaf asked for.
	Start int64
	// Leaves are the leaves from Start on, index ascending.
	Leaves []LogLeaf
}

// LogProofParams are the raw query parameters of an inclusion proof (GET
// /api/admin/log/proof).
type LogProofParams struct {
	// ID is the event's id: an integer of 1 or more.
	ID string
	// Size is the size of the tree to prove inclusion in, such as a
	// checkpoint's: an integer of 1 or more, at most the log's size.
	Size string
}

// LogConsistencyParams are the raw query parameters of a consistency
// proof (GET /api/admin/log/consistency).
type LogConsistencyParams struct {
	// From and To are tree sizes, 1 <= From <= To <= the log's size.
	From, To string
}

// LogLeavesParams are the raw query parameters of GET /api/admin/log/leaves.
type LogLeavesParams struct {
	// Start is the index of the first leaf: an integer of 0 or more
	// (default 0).
	Start string
	// Count is how many leaves: 1 to LogLeavesMaxCount (default
	// LogLeavesDefaultCount).
	Count string
}

// logConfigured returns the log's store, or the error of a Service
// without one (or without its prover, when proofs need it).
func (s *Service) logConfigured(proofs bool) (LogStore, error) {
	if s.log.Store == nil || proofs && s.log.Prover == nil {
		return nil, notFound("This server keeps no verifiable log: its store does not keep one.")
	}
	return s.log.Store, nil
}

// LogCheckpoint returns the newest signed checkpoint (GET
// /api/admin/log/checkpoint), with the witnesses' cosignatures the server
// holds of it: any admin-API principal may read it, as it reveals only the
// number of events. ErrNotFound, saying how to configure
// a key, when the server does not sign; ErrNotFound too before the first
// checkpoint is signed.
func (s *Service) LogCheckpoint(ctx context.Context, p Principal) (Checkpoint, error) {
	if err := s.authorize(ctx, p, adminAPI); err != nil {
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
			return Checkpoint{}, &LogRefusedError{Problem: err.Error()}
		}
	}
	c, err := ls.LatestCheckpoint(ctx)
	if isKind(err, ErrNotFound) {
		return Checkpoint{}, notFound("No checkpoint has been signed yet: the server signs one within 10 seconds of starting.")
	}
	if err == nil && s.log.Cosign != nil {
		c = s.log.Cosign(c)
	}
	return c, err
}

// LogInclusionProof returns the inclusion proof of an event in the tree of
// a size (GET /api/admin/log/proof), for an event the caller may see
// (as in a search): one it may not see, a pruned one and a missing one are
// all ErrNotFound. id and size are validated by name (ErrValidation).
func (s *Service) LogInclusionProof(ctx context.Context, p Principal, params LogProofParams) (InclusionProof, error) {
	if err := s.authorize(ctx, p, adminAPI); err != nil {
		return InclusionProof{}, err
	}
	v := &ValidationError{}
	id, idErr := parseLogInt("id", params.ID, 1)
	size, sizeErr := parseLogInt("size", params.Size, 1)
	for _, e := range []*ValidationError{idErr, sizeErr} {
		if e != nil {
			v.Fields = append(v.Fields, e.Fields...)
		}
	}
	if len(v.Fields) > 0 {
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
// prover can (LogReadProver), else step by step. The caller checks the
// answer.
func (s *Service) readInclusion(ctx context.Context, ls LogStore, p Principal, id, size int64) (LogProofAnswer, error) {
	if rp, ok := s.log.Prover.(LogReadProver); ok {
		q, none, err := s.visibleQuery(ctx, p, EventQuery{IDs: []int64{id}, Limit: 1})
		if err != nil || none {
			return LogProofAnswer{}, err
		}
		a, err := rp.EventInclusionProof(ctx, q, size)
		if !errors.Is(err, errors.ErrUnsupported) {
			return a, err
		}
	}
	page, err := s.search(ctx, p, EventQuery{IDs: []int64{id}, Limit: 1})
	if err != nil || len(page.Events) == 0 {
		return LogProofAnswer{}, err
	}
	a := LogProofAnswer{Visible: true}
	index, err := ls.LeafIndex(ctx, id)
	if isKind(err, ErrNotFound) {
		return a, nil
	}
	if err != nil {
		return LogProofAnswer{}, err
	}
	if a.LogSize, err = ls.LogSize(ctx); err != nil {
		return LogProofAnswer{}, err
	}
	if size > a.LogSize || size <= index {
		a.Leaf = &LogLeaf{Index: index, EventID: id}
		return a, nil
	}
	leaves, err := ls.LogLeaves(ctx, index, index+1)
	if err != nil {
		return LogProofAnswer{}, err
	}
	if len(leaves) != 1 {
		return LogProofAnswer{}, fmt.Errorf("log: leaf %d of event %d is missing", index, id)
	}
	a.Leaf = &leaves[0]
	if a.Hashes, err = s.log.Prover.InclusionProof(ctx, index, size); err != nil {
		return LogProofAnswer{}, err
	}
	return a, nil
}

// LogConsistencyProof returns the consistency proof between two tree
// sizes (GET /api/admin/log/consistency): any admin-API principal, as it
// reveals only hashes.
func (s *Service) LogConsistencyProof(ctx context.Context, p Principal, params LogConsistencyParams) (ConsistencyProof, error) {
	if err := s.authorize(ctx, p, adminAPI); err != nil {
		return ConsistencyProof{}, err
	}
	v := &ValidationError{}
	from, fromErr := parseLogInt("from", params.From, 1)
	to, toErr := parseLogInt("to", params.To, 1)
	for _, e := range []*ValidationError{fromErr, toErr} {
		if e != nil {
			v.Fields = append(v.Fields, e.Fields...)
		}
	}
	if len(v.Fields) == 0 && from > to {
		v.Fields = append(v.Fields, FieldError{Path: "from", Message: fmt.Sprintf("must be at most to (%d), got %d", to, from)})
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
// prover can (LogReadProver), else in two.
func (s *Service) readConsistency(ctx context.Context, ls LogStore, from, to int64) (LogProofAnswer, error) {
	if rp, ok := s.log.Prover.(LogReadProver); ok {
		a, err := rp.CheckedConsistencyProof(ctx, from, to)
		if !errors.Is(err, errors.ErrUnsupported) {
			return a, err
		}
	}
	var a LogProofAnswer
	var err error
	if a.LogSize, err = ls.LogSize(ctx); err != nil || to > a.LogSize {
		return a, err
	}
	a.Hashes, err = s.log.Prover.ConsistencyProof(ctx, from, to)
	return a, err
}

// LogLeaves returns a run of leaves (GET /api/admin/log/leaves): what
// "flagadmin log verify" compares the events with, pruned leaves included.
// A leaf names its event's id whoever's it is, so it needs the ADMIN
// permission.
func (s *Service) LogLeaves(ctx context.Context, p Principal, params LogLeavesParams) (LogLeafPage, error) {
	if err := s.authorize(ctx, p, rootAdmin); err != nil {
		return LogLeafPage{}, err
	}
	v := &ValidationError{}
	start, count := int64(0), int64(LogLeavesDefaultCount)
	if params.Start != "" {
		n, e := parseLogInt("start", params.Start, 0)
		if e != nil {
			v.Fields = append(v.Fields, e.Fields...)
		}
		start = n
	}
	if params.Count != "" {
		n, e := parseLogInt("count", params.Count, 1)
		switch {
		case e != nil:
			v.Fields = append(v.Fields, e.Fields...)
		case n > LogLeavesMaxCount:
			v.Fields = append(v.Fields, FieldError{Path: "count", Message: fmt.Sprintf("must be an integer from 1 to %d, got %d", LogLeavesMaxCount, n)})
		}
		count = n
	}
	if len(v.Fields) > 0 {
		return LogLeafPage{}, v
	}
	ls, err := s.logConfigured(false)
	if err != nil {
		return LogLeafPage{}, err
	}
	size, err := ls.LogSize(ctx)
	if err != nil {
		return LogLeafPage{}, err
	}
	page := LogLeafPage{TreeSize: size, Start: start, Leaves: []LogLeaf{}}
	if start >= size {
		return page, nil
	}
	leaves, err := ls.LogLeaves(ctx, start, min(start+count, size))
	if err != nil {
		return LogLeafPage{}, err
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

// parseLogInt parses a required decimal integer of at least lowest.
func parseLogInt(param, raw string, lowest int64) (int64, *ValidationError) {
	if raw == "" {
		return 0, invalid(param, "is required")
	}
	bad := invalid(param, "must be an integer of %d or more, got %s", lowest, QuoteInput(raw))
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
