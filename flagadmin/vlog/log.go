package vlog

import (
	"context"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Leaf is one leaf of the log's tree as a store keeps it: its hash,
// and what the hash commits to (adapters/tlog/leaf), kept when the event is pruned,
// so that the hash can be recomputed (LeafOf) and the removal checked
// against the retention the log records.
type Leaf struct {
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

// HashRange names consecutive hashes of one level of the tree: the
// roots of the perfect subtrees of 2^Level leaves with indexes Start to
// End-1 at that level (the subtree of index i covers the leaves i·2^Level
// to (i+1)·2^Level - 1). Level 0 is the leaves themselves.
type HashRange struct {
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

// Hold is a legal hold ("flagadmin log hold"): the events of Project are
// never pruned while it lasts.
type Hold struct {
	Project string
	// Since is when the hold was placed.
	Since time.Time
}

// Store is the storage of the verifiable log and its retention: a
// flagadmin.Store that keeps the log implements this too. adapters/memstore does;
// internal/storetest holds every implementation to the same contract.
//
// Leaves: each event a store writes (flagadmin.Store's Write,
// UpdateFeature, DeleteUser, DeleteToken, and bulk loads and imports) gets its leaf in the same
// transaction, in id order, with the next index (consecutive from 0,
// whatever the gaps in ids) and the hash LeafHash gives for the event as
// stored, its id included. A write that fails appends nothing; concurrent
// writers append one tree (the lock that makes events commit in id order
// serializes them). Leaves are never changed or removed: pruning
// marks them (Leaf.Pruned).
//
// Stored subtree hashes (levels above 0) only speed proofs up: they are
// saved by the tree's maintenance (adapters/tlog), computed from the
// leaves, and never needed for correctness.
type Store interface {
	// LogSize returns the number of leaves: the events ever written,
	// pruned ones included.
	LogSize(ctx context.Context) (int64, error)
	// LogLeaves returns the leaves with indexes start to end-1, index
	// ascending; fewer when the log has fewer. The caller bounds end-start
	// (LeavesMaxCount over HTTP).
	LogLeaves(ctx context.Context, start, end int64) ([]Leaf, error)
	// LeafIndex returns the index of the leaf of event id;
	// flagadmin.ErrNotFound when no leaf holds that id.
	LeafIndex(ctx context.Context, eventID int64) (int64, error)
	// LogHashes returns, for each range, the hashes stored at its level
	// from its Start on, in order: at most End-Start of them, fewer when
	// the store holds fewer (level 0: the leaf hashes, below LogSize;
	// other levels: what SaveLogHashes stored). One call reads every
	// range (one round trip for a SQL store).
	LogHashes(ctx context.Context, ranges []HashRange) ([][][32]byte, error)
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
	// flagadmin.ErrNotFound when none is stored.
	LatestCheckpoint(ctx context.Context) (Checkpoint, error)

	// PruneEvents removes at most limit events by the retention rule the
	// log records, lowest ids first. In its transaction, serialized with
	// RecordRetention, HoldProject and ReleaseProject, it reads the newest
	// event of type flagadmin.EventRetentionChanged (nil when there is
	// none) and calls cutoff with it: the events created before the time cutoff
	// returns are removed, none when it returns the zero time (no
	// retention in force); an error of cutoff is returned as it is,
	// nothing removed. It never removes those of a held project
	// (HoldProject; an event without a project is never held) nor those
	// of the types retention records (IsRetentionEvent), and returns the
	// ids it removed, ascending. Their leaves stay, marked pruned, with
	// their hashes. The events leave searches, exports, stream replays
	// and totals in the same transaction, which raises the store's
	// version (a flagadmin.VersionedStore); the rule and the holds are read in that
	// transaction too, so a rule recorded or a hold placed before the
	// call returns applies to it. When it removes any, it calls record
	// with their ids in that transaction and appends the event record
	// returns (an events-pruned event), as Write appends events: the
	// batch and its event are stored together or not at all. An error of
	// record is returned as it is, nothing removed.
	PruneEvents(ctx context.Context, limit int, cutoff func(rule *flagadmin.Event) (time.Time, error), record func(ids []int64) (flagadmin.Event, error)) ([]int64, error)
	// HoldProject places a legal hold on the events of project, whether
	// or not such a project exists (events outlive their projects), and
	// appends e, in one transaction. When the project is held already it
	// keeps the first hold, writes nothing and returns
	// flagadmin.ErrConflict.
	HoldProject(ctx context.Context, project string, since time.Time, e flagadmin.Event) error
	// ReleaseProject ends the hold on project and appends e, in one
	// transaction; flagadmin.ErrNotFound, and nothing written, when it
	// has none.
	ReleaseProject(ctx context.Context, project string, e flagadmin.Event) error
	// RecordRetention reads the newest event of type
	// flagadmin.EventRetentionChanged and calls fn with it (nil when there
	// is none); when fn returns an event, it is appended in the same
	// transaction. Of concurrent calls,
	// each reads what the ones before it appended: the read and the write
	// are serialized with each other (and with pruning and holds).
	RecordRetention(ctx context.Context, fn func(last *flagadmin.Event) (*flagadmin.Event, error)) error
	// LogHolds returns the holds, by project.
	LogHolds(ctx context.Context) ([]Hold, error)
}

// Prover computes what the tree answers from a Store's hashes: the
// proofs of RFC 9162 §2.1. adapters/tlog implements it (over stored
// subtree hashes, so a proof reads a few hundred hashes, not the log).
type Prover interface {
	// InclusionProof returns the inclusion path of leaf index in the tree
	// of the first size leaves, 0 <= index < size <= the log's size.
	InclusionProof(ctx context.Context, index, size int64) ([][]byte, error)
	// ConsistencyProof returns the consistency path from the tree of the
	// first from leaves to the tree of the first to leaves, 0 < from <= to
	// <= the log's size.
	ConsistencyProof(ctx context.Context, from, to int64) ([][]byte, error)
}

// ProofReader is a Store that reads what a proof needs in one read
// (one statement for a SQL store, so one snapshot): the log's size, an
// event's leaf with the check that the caller may see the event, and the
// stored hashes around that leaf, whose index the read itself finds. A
// Prover over it (adapters/tlog) then answers a proof request in one
// read instead of one per step (ReadProver).
type ProofReader interface {
	// ReadLogProof reads what q names. It returns an error wrapping
	// errors.ErrUnsupported when the store is set not to (a speed-up
	// turned off): the caller then reads step by step.
	ReadLogProof(ctx context.Context, q ProofQuery) (ProofRows, error)
}

// ProofQuery is what one ProofReader read returns.
type ProofQuery struct {
	// Event, when not nil, selects an event the way a search does: its IDs
	// hold the one event id; RequireProject and HiddenProjects are what
	// the caller's visibility, as in a search. Nil: no event is read, nor
	// Windows.
	Event *flagadmin.EventQuery
	// Windows name stored hashes around the leaf of the event, when it is
	// visible and has one.
	Windows []HashWindow
	// Ranges name stored hashes by position, as Store.LogHashes does.
	Ranges []HashRange
}

// HashWindow names the hashes of one level around a leaf of index i:
// the Width (a power of two) consecutive hashes of Level, aligned on
// Width, that hold i's ancestor at that level (the subtree of index
// i/2^Level), so from ⌊i / (2^Level·Width)⌋·Width on; only those with
// indexes below End.
type HashWindow struct {
	Level int
	Width int64
	End   int64
}

// Hash is a stored hash of the tree: the root of the perfect subtree
// of 2^Level leaves of index Index at that level (level 0: a leaf's hash).
type Hash struct {
	Level int
	Index int64
	Hash  [32]byte
}

// ProofRows is what a ProofReader read, all of it in one snapshot.
type ProofRows struct {
	// Size is the log's size (Store.LogSize).
	Size int64
	// Visible: the query's Event selects a stored event.
	Visible bool
	// Leaf is the leaf of that event; nil when the event is not visible
	// or has no leaf.
	Leaf *Leaf
	// Hashes are the stored hashes of the query's windows and ranges, in
	// no particular order (one may come twice); those a level lacks are
	// missing.
	Hashes []Hash
}

// ReadProver is a Prover that answers a proof request, the checks
// of Service's proofs included, in one read of its store (a ProofReader).
// Service uses it when its prover is one, and proves step by step (a
// search through the domain's Service, LeafIndex, LogSize, LogLeaves,
// Prover) when it answers an error wrapping errors.ErrUnsupported; both
// give the same answers.
type ReadProver interface {
	// EventInclusionProof reads the event q selects (its id and what the
	// caller may see, as for a search), its leaf, the log's size and, when
	// the leaf's index is below size and size is at most the log's size,
	// the inclusion path of the leaf in the tree of size leaves.
	EventInclusionProof(ctx context.Context, q flagadmin.EventQuery, size int64) (ProofAnswer, error)
	// CheckedConsistencyProof reads the log's size and, when to is at most
	// that size, the consistency path from the tree of from leaves to the
	// tree of to leaves, 0 < from <= to.
	CheckedConsistencyProof(ctx context.Context, from, to int64) (ProofAnswer, error)
}

// ProofAnswer is what a ReadProver read and proved.
type ProofAnswer struct {
	// LogSize is the log's size when read.
	LogSize int64
	// Visible and Leaf are ProofRows': whether the event is visible,
	// and its leaf (an inclusion proof only).
	Visible bool
	Leaf    *Leaf
	// Hashes is the path; nil when the sizes asked for do not allow one.
	Hashes [][]byte
}
