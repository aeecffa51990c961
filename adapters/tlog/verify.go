package tlog

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/note"

	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// Source is what Verify reads: a server over HTTP (its log routes and the
// export) or a store (StoreSource).
type Source interface {
	// Checkpoint returns the newest signed checkpoint, as a note.
	Checkpoint(ctx context.Context) ([]byte, error)
	// Leaves returns at most count leaves from index start on, index
	// ascending (fewer, or none, at the end of the log), with the log's
	// size when read.
	Leaves(ctx context.Context, start int64, count int) ([]vlog.Leaf, int64, error)
	// Events yields every event, id ascending, as an admin sees them
	// (every project). An error ends it.
	Events(ctx context.Context) iter.Seq2[flagadmin.Event, error]
}

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Verifier checks the checkpoints' signatures; its name is the log's
	// origin. Required.
	Verifier note.Verifier
	// Trusted is an earlier checkpoint the caller saved, or nil: the log
	// must still have its root at its size (the log was only appended to
	// since), which catches an older copy of the database put back.
	Trusted []byte
	// Progress, when not nil, is called every ProgressEvery leaves and at
	// the end.
	Progress func(VerifyProgress)
	// ProgressEvery is how many leaves between two Progress calls; 0
	// means 100,000.
	ProgressEvery int64
	// PageSize is how many leaves one Source.Leaves call asks for; 0
	// means vlog.LeavesMaxCount.
	PageSize int
	// StoredHashes, when not nil, is the store whose stored subtree
	// hashes are recomputed from its leaves too (reading a database
	// directly): each that differs is a BadHashes problem.
	StoredHashes vlog.Store
}

// VerifyProgress is how far a Verify has come.
type VerifyProgress struct {
	// Leaves checked so far, and the log's size when the check began.
	Leaves, Size int64
	// Events read so far.
	Events int64
	// Problems found so far.
	Problems int64
}

// ProblemKind is what is wrong with an event or the log.
type ProblemKind string

// The problems Verify finds.
const (
	// Changed: the event is not the one recorded: it does not match its
	// leaf, or the leaf's recorded fields do not hash to its hash.
	Changed ProblemKind = "changed"
	// Removed: the event of a leaf is gone, and no pruning pass the log
	// records removed it while it was eligible
	// (vlog.RetentionReplay), whatever the leaf's pruned flag says.
	Removed ProblemKind = "removed"
	// Inserted: an event has no leaf: it was not written through the log.
	Inserted ProblemKind = "inserted"
	// Reordered: the event holds what was recorded as another event (ids
	// swapped or moved).
	Reordered ProblemKind = "reordered"
	// BadLeaves: the leaves themselves are damaged (missing, out of order).
	BadLeaves ProblemKind = "leaves"
	// BadRoot: the tree recomputed from the events does not have the
	// signed checkpoint's root.
	BadRoot ProblemKind = "root"
	// Inconsistent: the log does not extend the trusted checkpoint.
	Inconsistent ProblemKind = "consistency"
	// BadHashes: a stored subtree hash is not the hash of its leaves.
	BadHashes ProblemKind = "stored hash"
	// BadRecord: a retention event does not account for what it records
	// (a pruning pass that lists events the log did not hold before it,
	// data that cannot be read).
	BadRecord ProblemKind = "retention record"
)

// Problem is one thing Verify found wrong.
type Problem struct {
	Kind ProblemKind
	// EventID is the event concerned, 0 for none; LeafIndex its leaf, -1
	// for none.
	EventID, LeafIndex int64
	// OtherEventID is, for Reordered, the event whose recorded content
	// this one holds.
	OtherEventID int64
	// Detail says more, for people.
	Detail string
}

// String describes the problem in a sentence.
func (p Problem) String() string {
	if p.EventID == 0 {
		return p.Detail
	}
	where := fmt.Sprintf("event %d", p.EventID)
	if p.LeafIndex >= 0 {
		where += fmt.Sprintf(" (leaf %d)", p.LeafIndex)
	}
	if p.Kind == BadRecord {
		return fmt.Sprintf("%s does not account for retention: %s", where, p.Detail)
	}
	return fmt.Sprintf("%s was %s: %s", where, p.Kind, p.Detail)
}

// PrunedRange is a run of consecutive leaves whose events were pruned by
// retention: each removed by a pruning pass the log records, while it was
// eligible.
type PrunedRange struct {
	FirstLeaf, LastLeaf int64
	FirstID, LastID     int64
}

// Report is what Verify found.
type Report struct {
	// Origin, CheckpointSize and CheckpointRoot are those of the newest
	// signed checkpoint, Note the checkpoint itself.
	Origin         string
	CheckpointSize int64
	CheckpointRoot [32]byte
	Note           []byte
	// TrustedSize is the size of the trusted checkpoint, 0 without one.
	TrustedSize int64
	// Leaves is how many leaves were checked, Events how many events read.
	Leaves, Events int64
	// Beyond is how many of the leaves checked are past the checkpoint
	// (written since it was signed): each was compared with its event,
	// but no signature covers them yet.
	Beyond int64
	// Pruned are the ranges of leaves whose events retention removed,
	// leaf ascending.
	Pruned []PrunedRange
	// StoredHashes is how many stored subtree hashes were recomputed from
	// the leaves (VerifyOptions.StoredHashes).
	StoredHashes int64
	// Problems are the first maxProblems problems in log order (a
	// problem of the roots where the tree reached the checkpoint's size,
	// those of the stored hashes last); Omitted counts those left out.
	Problems []Problem
	Omitted  int64
}

// OK reports whether everything holds.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// maxProblems bounds the problems a Report lists.
const maxProblems = 100

// maxMismatches bounds the changed events kept to tell reordering.
const maxMismatches = 100

// maxStash bounds the events read past the last leaf seen before the
// leaves are read again.
const maxStash = 10000

// Verify recomputes the log's tree from the events and checks it against
// the newest signed checkpoint, and against opts.Trusted when given. It
// reads the leaves and the events side by side: each leaf's recorded
// fields must hash to its hash (leaf.LeafOf), and each event must be
// the one its leaf commits to (leaf.LeafMatches, with the leaf's
// salt), which names the first event changed, removed, inserted or
// reordered. A leaf whose event is missing counts with its stored hash;
// the event counts as pruned only where the retention events of the log,
// replayed in order (vlog.RetentionReplay), show a pruning pass that
// removed it while it was eligible, and as removed otherwise, whatever
// the leaf's pruned flag says. Memory stays constant but for the missing
// events whose pass is still ahead in the log. The error is for what
// stops the check (the source failing, a signature that does not
// verify); what the check finds is in the Report.
func Verify(ctx context.Context, src Source, opts VerifyOptions) (*Report, error) {
	if opts.Verifier == nil {
		return nil, errors.New("tlog: Verify needs a verifier key")
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 100000
	}
	if opts.PageSize <= 0 {
		opts.PageSize = vlog.LeavesMaxCount
	}
	raw, err := src.Checkpoint(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the checkpoint: %w", err)
	}
	cp, err := OpenCheckpoint(raw, opts.Verifier)
	if err != nil {
		return nil, err
	}
	v := &verification{src: src, opts: opts, ctx: ctx, leaves: &leafReader{src: src, pageSize: opts.PageSize},
		report: &Report{Origin: cp.Origin, CheckpointSize: int64(cp.Size), CheckpointRoot: [32]byte(cp.Hash), Note: raw}}
	v.replay = vlog.NewRetentionReplay(v.retention)
	v.cpRoot = [32]byte(cp.Hash)
	if opts.Trusted != nil {
		t, err := OpenCheckpoint(opts.Trusted, opts.Verifier)
		if err != nil {
			return nil, fmt.Errorf("the trusted checkpoint: %w", err)
		}
		v.trusted = &t
		v.report.TrustedSize = int64(t.Size)
	}
	if err := v.run(); err != nil {
		return nil, err
	}
	if opts.StoredHashes != nil {
		n, err := checkStoredHashes(ctx, opts.StoredHashes, func(p Problem) { v.problem(p) })
		if err != nil {
			return nil, fmt.Errorf("check the stored hashes: %w", err)
		}
		v.report.StoredHashes = n
	}
	return v.report, nil
}

// verification is the state of one Verify.
type verification struct {
	ctx    context.Context
	src    Source
	opts   VerifyOptions
	report *Report
	cpRoot [32]byte
	// trusted is the trusted checkpoint, nil without one.
	trusted *log.Checkpoint
	leaves  *leafReader
	// size0 is the log's size when the first leaves were read.
	size0 int64

	// expect is the index of the next leaf; prevID the event id of the
	// leaf before it.
	expect, prevID int64
	// tree holds the recomputed hashes of the leaves below need; broken
	// when a leaf is missing from the sequence.
	tree   *compact.Range
	need   int64
	broken bool
	// eventProblems counts the problems of events (not of roots).
	eventProblems int64
	// suspects are the first changed, removed and inserted events, to
	// tell which were reordered.
	suspects []suspect
	// keys are where each of report.Problems was found, to keep them in
	// log order; seq numbers the problems.
	keys []problemKey
	seq  int
	// replay decides on the missing events; pruned are the runs of those
	// it accepted, in the order it did.
	replay *vlog.RetentionReplay
	pruned []PrunedRange
}

// problemKey places a problem in the log: pos is 2·index+1 for a leaf's,
// 2·index for one found before leaf index; seq tells problems apart.
type problemKey struct {
	pos int64
	seq int
}

// suspect is a changed event (leaf and event), a removed one (its leaf,
// read again when needed) or an inserted one (event only), with its
// problem.
type suspect struct {
	problem int // the problem's seq, -1 when not listed
	leaf    *vlog.Leaf
	// removed is the leaf index of a removed event, -1 for none.
	removed int64
	event   *flagadmin.Event
}

func (v *verification) run() error {
	v.need = v.report.CheckpointSize
	if v.trusted != nil {
		v.need = max(v.need, int64(v.trusted.Size))
	}
	v.tree = rangeFactory.NewEmptyRange(0)
	v.checkRoots()
	// The first leaves are read before the export starts: every leaf
	// below size0 has its event in the export unless it was removed.
	if _, _, err := v.leaves.peek(v.ctx); err != nil {
		return err
	}
	v.size0 = v.leaves.size
	next, stop := eventsAhead(v.ctx, v.src.Events)
	defer stop()
	events := &eventReader{next: next, report: v.report}
	if err := events.advance(); err != nil {
		return err
	}
	for {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		done, err := v.step(events)
		if done || err != nil {
			return err
		}
	}
}

// step takes the next leaf, the next event, or both, as the ids pair
// them, and reports whether the check is done.
func (v *verification) step(events *eventReader) (done bool, err error) {
	l, lOK, err := v.leaves.peek(v.ctx)
	if err != nil {
		return false, err
	}
	ev, evOK := events.ev, events.ok
	switch {
	case !lOK && !evOK:
		v.finish()
		return true, nil
	case !lOK:
		return false, v.pastLastLeaf(events)
	case !evOK && l.Index >= v.size0:
		// Leaves written since the check began, without their events.
		v.finish()
		return true, nil
	case !evOK || ev.ID > l.EventID:
		v.leaf(l, nil)
		v.leaves.advance()
		return false, nil
	case ev.ID < l.EventID:
		v.inserted(ev)
		return false, events.advance()
	default:
		v.leaf(l, &ev)
		v.leaves.advance()
		return false, events.advance()
	}
}

// pastLastLeaf takes an event past the last leaf read: its leaf was
// written with it, so reading the leaves again finds it. It reads on a
// while first (up to maxStash events), to read the leaves once for many
// events; events that still have no leaf then were inserted.
func (v *verification) pastLastLeaf(events *eventReader) error {
	events.stash = append(events.stash, events.ev)
	if err := events.advance(); err != nil || events.ok && len(events.stash) < maxStash {
		return err
	}
	more, err := v.leaves.refresh(v.ctx)
	if err != nil {
		return err
	}
	if events.ok {
		events.stash = append(events.stash, events.ev)
	}
	if !more {
		for _, e := range events.stash {
			v.insertedPastTheEnd(e)
		}
		events.stash = events.stash[:0]
		return events.advance()
	}
	events.replay, events.stash = append(events.stash, events.replay...), nil
	return events.advance()
}

// eventReader reads the Source's events one at a time: ev is the current
// one, ok false past the last. Events set aside (stash) while the leaves
// are read again are read again from replay first.
type eventReader struct {
	next          func() (flagadmin.Event, error, bool)
	report        *Report
	ev            flagadmin.Event
	ok            bool
	stash, replay []flagadmin.Event
}

// advance moves to the next event.
func (r *eventReader) advance() error {
	if len(r.replay) > 0 {
		r.ev, r.ok, r.replay = r.replay[0], true, r.replay[1:]
		return nil
	}
	e, err, ok := r.next()
	if err != nil {
		r.ok = false
		return fmt.Errorf("read the events: %w", err)
	}
	if ok {
		r.report.Events++
	}
	r.ev, r.ok = e, ok
	return nil
}

// leaf checks one leaf with its event, or without (ev nil), and adds the
// hash to the tree.
func (v *verification) leaf(l vlog.Leaf, ev *flagadmin.Event) {
	v.checkOrder(l)
	var hash [32]byte
	if ev == nil {
		hash = v.withoutEvent(l)
	} else {
		hash = v.withEvent(l, *ev)
	}
	v.add(l, hash)
}

// checkOrder reports a leaf that does not follow the one before it: an
// index skipped, or an event id that does not ascend.
func (v *verification) checkOrder(l vlog.Leaf) {
	if l.Index != v.expect {
		v.problem(Problem{Kind: BadLeaves, LeafIndex: -1, Detail: missingLeaves(v.expect, l.Index-1)})
		v.broken = true
	} else if l.Index > 0 && l.EventID <= v.prevID {
		v.problem(Problem{Kind: BadLeaves, LeafIndex: -1, Detail: fmt.Sprintf("leaf %d names event %d, after event %d: leaves must follow the ids", l.Index, l.EventID, v.prevID)})
	}
	v.expect, v.prevID = l.Index+1, l.EventID
}

// withoutEvent checks a leaf whose event is missing: its recorded fields
// must hash to its hash, and the retention replay decides whether a
// recorded pass removed the event. It returns the hash the tree takes.
func (v *verification) withoutEvent(l vlog.Leaf) [32]byte {
	if leaf.LeafOf(l) != l.Hash {
		// A tombstone rewritten (to look old, or of another project)
		// accounts for nothing.
		v.replay.Skip(l)
		v.problem(Problem{Kind: Removed, EventID: l.EventID, LeafIndex: l.Index,
			Detail: "its leaf's recorded fields do not hash to its leaf hash: they were rewritten, and do not account for its removal"})
		return l.Hash
	}
	v.replay.Next(l, nil) // the replay decides (retention)
	return l.Hash
}

// withEvent checks a leaf with its event: the leaf's recorded fields must
// hash to its hash, and the event (with the leaf's salt) must be the one
// they record. It returns the hash the tree takes: the event's own when
// it differs, so that the root tells too.
func (v *verification) withEvent(l vlog.Leaf, ev flagadmin.Event) [32]byte {
	if leaf.LeafOf(l) != l.Hash {
		v.replay.Next(l, &ev)
		v.problem(Problem{Kind: Changed, EventID: ev.ID, LeafIndex: l.Index,
			Detail: "its leaf's recorded fields do not hash to its leaf hash: the leaf was rewritten"})
		return l.Hash
	}
	e := ev
	e.Salt = l.Salt
	hash := l.Hash
	match, err := leaf.LeafMatches(l, e)
	switch {
	case err != nil:
		v.problem(Problem{Kind: Changed, EventID: ev.ID, LeafIndex: l.Index, Detail: err.Error()})
	case !match:
		p := v.problem(Problem{Kind: Changed, EventID: ev.ID, LeafIndex: l.Index, Detail: mismatch(l, e)})
		v.suspect(p, &l, -1, &e)
		if h, err := leaf.LeafHash(e); err == nil {
			hash = h
		}
	}
	v.replay.Next(l, &e)
	return hash
}

// add counts the leaf, adds its hash to the tree while the tree is below
// the size to check, and compares roots where a checkpoint's size is
// reached.
func (v *verification) add(l vlog.Leaf, hash [32]byte) {
	r := v.report
	r.Leaves++
	if l.Index >= r.CheckpointSize {
		r.Beyond++
	}
	if l.Index < v.need && !v.broken {
		if err := v.tree.Append(hash[:], nil); err != nil {
			v.broken = true
		}
		v.checkRoots()
	}
	if p := v.opts.Progress; p != nil && r.Leaves%v.opts.ProgressEvery == 0 {
		p(v.progress())
	}
}

// inserted reports an event that has no leaf.
func (v *verification) inserted(e flagadmin.Event) {
	v.insertedWith(e, "it has no leaf in the log")
}

// insertedPastTheEnd reports an event past the last leaf that has no
// leaf: a server appends the leaves of events past the last one, so it
// was inserted, or written by a server that stopped before appending
// its leaf.
func (v *verification) insertedPastTheEnd(e flagadmin.Event) {
	v.insertedWith(e, "it has no leaf in the log, past the last leaf: inserted, or written by a server "+
		"that stopped before appending its leaf (a server started on the database appends it)")
}

func (v *verification) insertedWith(e flagadmin.Event, detail string) {
	p := v.problem(Problem{Kind: Inserted, EventID: e.ID, LeafIndex: -1, Detail: detail})
	v.suspect(p, nil, -1, &e)
}

// retention takes a verdict of the replay: a missing event pruned by
// retention, or a problem.
func (v *verification) retention(d vlog.RetentionVerdict) {
	switch {
	case d.Pruned:
		if n := len(v.pruned); n > 0 && v.pruned[n-1].LastLeaf == d.LeafIndex-1 {
			v.pruned[n-1].LastLeaf, v.pruned[n-1].LastID = d.LeafIndex, d.EventID
			return
		}
		v.pruned = append(v.pruned, PrunedRange{FirstLeaf: d.LeafIndex, LastLeaf: d.LeafIndex, FirstID: d.EventID, LastID: d.EventID})
	case d.Record:
		v.problem(Problem{Kind: BadRecord, EventID: d.EventID, LeafIndex: d.LeafIndex, Detail: d.Reason})
	default:
		p := v.problem(Problem{Kind: Removed, EventID: d.EventID, LeafIndex: d.LeafIndex, Detail: d.Reason})
		v.suspect(p, nil, d.LeafIndex, nil)
	}
}

// prunedRanges returns the runs of pruned leaves in leaf order, adjacent
// ones joined.
func (v *verification) prunedRanges() []PrunedRange {
	slices.SortFunc(v.pruned, func(a, b PrunedRange) int { return cmp.Compare(a.FirstLeaf, b.FirstLeaf) })
	var out []PrunedRange
	for _, p := range v.pruned {
		if n := len(out); n > 0 && out[n-1].LastLeaf == p.FirstLeaf-1 {
			out[n-1].LastLeaf, out[n-1].LastID = p.LastLeaf, p.LastID
			continue
		}
		out = append(out, p)
	}
	return out
}

// mismatch says how the event e differs from its leaf l.
func mismatch(l vlog.Leaf, e flagadmin.Event) string {
	var fields []string
	if !flagadmin.Truncate(e.CreatedAt).Equal(flagadmin.Truncate(l.CreatedAt)) {
		fields = append(fields, "createdAt")
	}
	if (e.Project == nil) != (l.Project == nil) || e.Project != nil && *e.Project != *l.Project {
		fields = append(fields, "project")
	}
	if e.Type != l.Type {
		fields = append(fields, "type")
	}
	if c, err := leaf.ContentCommitment(e); err == nil && c != l.Content {
		fields = append(fields, "content")
	}
	if len(fields) == 0 {
		return "it is not the event its leaf commits to"
	}
	verb := "differs"
	if len(fields) > 1 {
		verb = "differ"
	}
	list := strings.Join(fields, ", ")
	if n := len(fields); n > 1 {
		list = strings.Join(fields[:n-1], ", ") + " and " + fields[n-1]
	}
	return fmt.Sprintf("its %s %s from what its leaf recorded when it was written", list, verb)
}

// problem lists p, keeping the first maxProblems in log order, and
// returns its seq, -1 when left out.
func (v *verification) problem(p Problem) int {
	if p.Kind != BadRoot && p.Kind != Inconsistent && p.Kind != BadHashes {
		v.eventProblems++
	}
	r := v.report
	key := problemKey{pos: 2 * v.expect, seq: v.seq}
	if p.LeafIndex >= 0 {
		key.pos = 2*p.LeafIndex + 1
	}
	v.seq++
	i, _ := slices.BinarySearchFunc(v.keys, key.pos+1, func(k problemKey, pos int64) int { return cmp.Compare(k.pos, pos) })
	if i >= maxProblems {
		r.Omitted++
		return -1
	}
	r.Problems = slices.Insert(r.Problems, i, p)
	v.keys = slices.Insert(v.keys, i, key)
	if len(r.Problems) > maxProblems {
		r.Problems, v.keys = r.Problems[:maxProblems], v.keys[:maxProblems]
		r.Omitted++
	}
	return key.seq
}

// problemOf returns the index in report.Problems of the problem seq, -1
// when it was left out.
func (v *verification) problemOf(seq int) int {
	if seq < 0 {
		return -1
	}
	return slices.IndexFunc(v.keys, func(k problemKey) bool { return k.seq == seq })
}

func (v *verification) suspect(problem int, l *vlog.Leaf, removed int64, e *flagadmin.Event) {
	if problem >= 0 && len(v.suspects) < 3*maxMismatches {
		v.suspects = append(v.suspects, suspect{problem: problem, leaf: l, removed: removed, event: e})
	}
}

// checkRoots compares the tree, when it reaches a checkpoint's size, with
// the checkpoint's root.
func (v *verification) checkRoots() {
	size := int64(v.tree.End())
	if size == v.report.CheckpointSize {
		if root, ok := v.root(); ok && root != v.cpRoot {
			detail := "the events do not hash to the root of the signed checkpoint"
			if v.eventProblems == 0 {
				detail += ", although each matches its leaf: the leaves were rewritten too"
			}
			v.problem(Problem{Kind: BadRoot, LeafIndex: -1, Detail: detail})
		}
	}
	if t := v.trusted; t != nil && size == int64(t.Size) {
		if root, ok := v.root(); ok && !bytes.Equal(root[:], t.Hash) {
			first := fmt.Sprintf("the first %d events no longer hash", t.Size)
			if t.Size == 1 {
				first = "the first event no longer hashes"
			}
			v.problem(Problem{Kind: Inconsistent, LeafIndex: -1, Detail: first +
				" to the root of the trusted checkpoint: the log was rewritten, or an older copy of the database put back, since it was saved"})
		}
	}
}

// root is the root of the tree so far.
func (v *verification) root() ([32]byte, bool) {
	if v.tree.End() == 0 {
		return [32]byte(hasher.EmptyRoot()), true
	}
	root, err := v.tree.GetRootHash(nil)
	if err != nil {
		return [32]byte{}, false
	}
	return [32]byte(root), true
}

// finish reports the checkpoints the log is too short for, and tells
// reordered events from changed ones.
func (v *verification) finish() {
	v.replay.Finish()
	v.report.Pruned = v.prunedRanges()
	r, size := v.report, int64(v.tree.End())
	if v.broken {
		v.problem(Problem{Kind: BadRoot, LeafIndex: -1, Detail: "the tree cannot be recomputed: leaves are missing"})
	} else if size < r.CheckpointSize {
		v.problem(Problem{Kind: BadRoot, LeafIndex: -1, Detail: fmt.Sprintf(
			"the log has %s, fewer than the %d the newest checkpoint covers: leaves were removed", count(size, "leaf", "leaves"), r.CheckpointSize)})
	}
	if t := v.trusted; t != nil {
		if int64(t.Size) > r.CheckpointSize {
			v.problem(Problem{Kind: Inconsistent, LeafIndex: -1, Detail: fmt.Sprintf(
				"the newest checkpoint covers %s, fewer than the %d of the trusted checkpoint: the log went back in time (an older copy of the database put back?)", count(r.CheckpointSize, "event", "events"), t.Size)})
		}
		if !v.broken && size < int64(t.Size) {
			v.problem(Problem{Kind: Inconsistent, LeafIndex: -1, Detail: fmt.Sprintf(
				"the log has %s, fewer than the %d of the trusted checkpoint", count(size, "leaf", "leaves"), t.Size)})
		}
	}
	v.reordered()
	if p := v.opts.Progress; p != nil {
		p(v.progress())
	}
}

// reordered finds the suspects that hold what another one recorded: an
// event whose leaf hash, with the other's id (and its own salt or the
// other's), is the other's leaf hash.
func (v *verification) reordered() {
	r := v.report
	for i, s := range v.suspects {
		if s.removed < 0 {
			continue
		}
		// The leaf of a removed event was not kept: read it again.
		ls, _, err := v.src.Leaves(v.ctx, s.removed, 1)
		if err == nil && len(ls) == 1 && ls[0].Index == s.removed {
			v.suspects[i].leaf = &ls[0]
		}
	}
	for _, s := range v.suspects {
		if s.event == nil {
			continue
		}
		for _, o := range v.suspects {
			if o.leaf == nil || o.leaf.EventID == s.event.ID || !holds(*s.event, *o.leaf) {
				continue
			}
			if p := v.problemOf(s.problem); p >= 0 {
				r.Problems[p] = Problem{Kind: Reordered, EventID: s.event.ID, LeafIndex: r.Problems[p].LeafIndex,
					OtherEventID: o.leaf.EventID, Detail: fmt.Sprintf("it holds what was recorded as event %d", o.leaf.EventID)}
			}
			if p := v.problemOf(o.problem); p >= 0 && o.event == nil { // the other's event is gone: it moved here
				r.Problems[p] = Problem{Kind: Reordered, EventID: o.leaf.EventID, LeafIndex: o.leaf.Index,
					OtherEventID: s.event.ID, Detail: fmt.Sprintf("what was recorded as it is now event %d", s.event.ID)}
			}
			break
		}
	}
}

// holds reports whether e, with the id of leaf l, is l's event: with e's
// own salt (read from its leaf) or with l's.
func holds(e flagadmin.Event, l vlog.Leaf) bool {
	e.ID = l.EventID
	for _, salt := range [][]byte{e.Salt, l.Salt} {
		e.Salt = salt
		if h, err := leaf.LeafHash(e); err == nil && h == l.Hash {
			return true
		}
	}
	return false
}

func (v *verification) progress() VerifyProgress {
	return VerifyProgress{Leaves: v.report.Leaves, Size: v.size0, Events: v.report.Events, Problems: v.eventProblems}
}

// leafReader reads a Source's leaves a page at a time. After a full page
// it reads the next one while the caller checks this one (ahead): the
// source's work (a server's, a database's) then overlaps the check's.
type leafReader struct {
	src      Source
	pageSize int
	page     []vlog.Leaf
	at       int
	next     int64 // the index to read from
	size     int64 // the log's size at the last read
	dry      bool  // the last read found none: peek finds none until refresh
	// ahead is the page from next on being read, nil when none is.
	ahead chan leafPage
}

// leafPage is the answer of one Source.Leaves call.
type leafPage struct {
	leaves []vlog.Leaf
	size   int64
	err    error
}

// peek returns the next leaf, reading a page when needed; false at the
// end of the leaves.
func (r *leafReader) peek(ctx context.Context) (vlog.Leaf, bool, error) {
	if r.at < len(r.page) {
		return r.page[r.at], true, nil
	}
	if r.dry {
		return vlog.Leaf{}, false, nil
	}
	var p leafPage
	if r.ahead != nil {
		p, r.ahead = <-r.ahead, nil
	} else {
		p = r.read(ctx, r.next)
	}
	if p.err != nil {
		return vlog.Leaf{}, false, fmt.Errorf("read the leaves from %d: %w", r.next, p.err)
	}
	r.page, r.at, r.size = p.leaves, 0, p.size
	if len(p.leaves) == 0 {
		r.dry = true
		return vlog.Leaf{}, false, nil
	}
	r.next = p.leaves[len(p.leaves)-1].Index + 1
	if len(p.leaves) >= r.pageSize {
		// More may follow: read them while this page is checked. A page
		// short of the count is the end of the log, read again only when
		// needed (refresh).
		ahead, from := make(chan leafPage, 1), r.next
		go func() { ahead <- r.read(ctx, from) }()
		r.ahead = ahead
	}
	return p.leaves[0], true, nil
}

// read reads the page from start on.
func (r *leafReader) read(ctx context.Context, start int64) leafPage {
	leaves, size, err := r.src.Leaves(ctx, start, r.pageSize)
	return leafPage{leaves: leaves, size: size, err: err}
}

func (r *leafReader) advance() { r.at++ }

// refresh reads the leaves again after peek found none, and reports
// whether there are more now.
func (r *leafReader) refresh(ctx context.Context) (bool, error) {
	r.dry = false
	_, ok, err := r.peek(ctx)
	return ok, err
}

// eventsAhead reads the events of seq in a goroutine of their own, a
// batch at a time, a few batches ahead of next: the decoding of a
// server's export then overlaps the check. stop ends the reading and
// waits for the goroutine.
func eventsAhead(ctx context.Context, events func(context.Context) iter.Seq2[flagadmin.Event, error]) (next func() (flagadmin.Event, error, bool), stop func()) {
	const batchSize, batches = 256, 4
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan []eventOrError, batches)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		batch := make([]eventOrError, 0, batchSize)
		send := func() bool {
			select {
			case ch <- batch:
				batch = make([]eventOrError, 0, batchSize)
				return true
			case <-ctx.Done():
				return false
			}
		}
		for e, err := range events(ctx) {
			batch = append(batch, eventOrError{e, err})
			if (err != nil || len(batch) == batchSize) && !send() || err != nil {
				return
			}
		}
		if len(batch) > 0 {
			send()
		}
	}()
	var batch []eventOrError
	next = func() (flagadmin.Event, error, bool) {
		for len(batch) == 0 {
			b, ok := <-ch
			if !ok {
				return flagadmin.Event{}, nil, false
			}
			batch = b
		}
		x := batch[0]
		batch = batch[1:]
		return x.event, x.err, true
	}
	stop = func() {
		cancel()
		<-done
	}
	return next, stop
}

// eventOrError is one item of an iter.Seq2 of events.
type eventOrError struct {
	event flagadmin.Event
	err   error
}

// missingLeaves says that the leaves first to last are missing.
func missingLeaves(first, last int64) string {
	if first == last {
		return fmt.Sprintf("leaf %d is missing from the log", first)
	}
	return fmt.Sprintf("leaves %d to %d are missing from the log", first, last)
}

// count writes n with one when n is 1, else with many: "1 leaf", "2 leaves".
func count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
