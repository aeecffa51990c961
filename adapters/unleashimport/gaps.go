package unleashimport

import (
	"slices"
	"sort"
)

// The gap rule: when is a missing event id settled?
//
// Unleash draws an event's id from a sequence (events.id's default,
// nextval('events_id_seq')) inside the transaction that writes the event.
// Transactions commit in any order, so id n+1 can be visible while n is
// not yet; and a transaction that rolls back leaves n missing for ever.
// A follower that delivers every event exactly once, in id order, none
// skipped, must therefore tell a missing id that may still appear (its
// transaction is open) from a hole (it never will). The rule:
//
//	A missing id g, seen missing below a visible id m in a read's
//	snapshot, is a hole once it is still missing in a snapshot taken
//	after every transaction that held a write lock on the events table
//	at some moment after g was first seen missing has released it.
//
// Why it holds:
//
//  1. The sequence hands out ids in time order (CACHE 1, which Start
//     checks), so the transaction T that drew g drew it before m was
//     drawn, hence before m's transaction committed, hence before the
//     snapshot S in which m is visible and g missing.
//  2. Unleash draws ids only in the INSERT INTO events that writes them
//     (the column's default; its event store never calls nextval itself).
//     PostgreSQL takes that statement's lock on the table
//     (RowExclusiveLock) when it parses it, before its default draws the
//     id, and keeps it until the transaction ends. So from before g was
//     drawn until T ends, T holds a write lock on events — whether or not
//     it has been assigned a transaction id yet (it gets one only when the
//     row is written, a moment after nextval: a snapshot's list of running
//     transaction ids can miss T in that window; the lock cannot).
//  3. PostgreSQL ends a transaction in the proc array (its commit or abort
//     becomes visible to new snapshots) before it releases its locks. So
//     once T's lock is gone, every snapshot taken afterwards sees T's
//     outcome.
//  4. At S, T was either finished — then S shows its outcome and g missing
//     means g was never committed — or running, and then holding its lock.
//     A reading of pg_locks taken after S (it sees fast-path locks too)
//     either finds T among the writers, or T released before the reading.
//     Keeping, for g, the writers of the first reading after S, and
//     dropping each one a later reading no longer finds, the set empties
//     only after T's lock is gone; a snapshot taken after that reading
//     sees T's outcome, so g still missing there is a hole.
//
// Assumptions (checked where they can be): ids come from one sequence with
// CACHE 1 and a positive increment (checked at start); ids are drawn only
// by INSERTs into events (Unleash's event store; an id drawn by a bare
// nextval() and inserted by a later statement would escape the rule); the
// source is a primary, whose pg_locks shows its writers (a hot standby's
// does not: refused at start); and nobody inserts an explicit id below ids
// already committed.
//
// What it costs: nothing while no id is missing; while one is, one reading
// of pg_locks per poll (filtered to the events table), and delivery of the
// ids above it waits for the transactions that wrote events when it was
// seen — a long transaction holds the copy back until it ends, as it must.
//
// The follower applies only a settled prefix: every id up to its position
// is applied or a hole. The position is therefore all it records; the
// missing ids above it are found again, and their writers read again,
// after a restart.

// gapRange is a run of ids missing in the snapshot where they were first
// seen missing below a visible id.
type gapRange struct {
	lo, hi int64
	// writers are the transactions (pg_locks' virtualtransaction) that
	// held a write lock on events at the first reading after the range
	// was seen, less those later readings no longer found; known is false
	// before that first reading.
	writers []string
	known   bool
}

// cleared reports whether every writer that could hold an id of the range
// has released its lock, at a reading before the current snapshot.
func (g *gapRange) cleared() bool { return g.known && len(g.writers) == 0 }

// gapTracker keeps the missing ids above the position that are not
// settled yet, and decides which are holes (the gap rule above).
type gapTracker struct {
	pending []gapRange // ascending, disjoint
}

// settlement is what settle decided for one snapshot.
type settlement struct {
	// deliver counts the leading visible ids that are settled: they and
	// the holes between them can be applied.
	deliver int
	// position is the new position: the last settled id.
	position int64
	// holes counts the ids up to position, above the old one, that are holes.
	holes int64
	// waitingFor is the first id not settled while a visible id is above
	// it (0 when none).
	waitingFor int64
}

// settle decides, for a snapshot in which the ids above position that are
// visible are visible (ascending, as read), how far the settled prefix
// reaches. It must be called once per snapshot, before the reading of
// writers (observe) that follows it: the holes it declares are the ranges
// cleared by earlier readings. It also records the ids newly seen missing
// below a visible id.
func (t *gapTracker) settle(position int64, visible []int64) settlement {
	t.prune(position, visible)
	s := settlement{position: position}
	prev := position // the id before the current one, visible or missing
	blocked := false
	for _, id := range visible {
		if id <= position {
			continue
		}
		if id > prev+1 { // prev+1 .. id-1 are missing
			t.add(prev+1, id-1)
			if !blocked {
				to := t.clearedTo(prev+1, id-1)
				s.holes += to - prev
				if to < id-1 {
					blocked, s.position, s.waitingFor = true, to, to+1
				}
			}
		}
		prev = id
		if !blocked {
			s.position = id
			s.deliver++
		}
	}
	t.prune(s.position, nil)
	return s
}

// clearedTo returns the last id x of lo..hi such that every id of lo..x
// is in a cleared pending range (lo-1 when lo is not).
func (t *gapTracker) clearedTo(lo, hi int64) int64 {
	to := lo - 1
	for _, g := range t.pending {
		if g.hi <= to {
			continue
		}
		if g.lo > to+1 || !g.cleared() {
			break
		}
		if to = min(g.hi, hi); to == hi {
			break
		}
	}
	return to
}

// add records lo..hi as missing, keeping what is already pending (its
// writers were read earlier, which the rule allows) and adding the rest
// as new ranges whose writers are not known yet.
func (t *gapTracker) add(lo, hi int64) {
	var added []gapRange
	next := lo
	for _, g := range t.pending {
		if g.hi < next || g.lo > hi {
			continue
		}
		if g.lo > next {
			added = append(added, gapRange{lo: next, hi: g.lo - 1})
		}
		next = g.hi + 1
		if next > hi {
			break
		}
	}
	if next <= hi {
		added = append(added, gapRange{lo: next, hi: hi})
	}
	if len(added) == 0 {
		return
	}
	t.pending = append(t.pending, added...)
	sort.Slice(t.pending, func(i, j int) bool { return t.pending[i].lo < t.pending[j].lo })
}

// prune drops the pending ids up to position and the ids now visible
// (ascending).
func (t *gapTracker) prune(position int64, visible []int64) {
	out := t.pending[:0]
	vi := 0
	for _, g := range t.pending {
		if g.hi <= position {
			continue
		}
		g.lo = max(g.lo, position+1)
		for vi < len(visible) && visible[vi] < g.lo {
			vi++
		}
		for vi < len(visible) && visible[vi] <= g.hi {
			id := visible[vi]
			if id > g.lo {
				out = append(out, gapRange{lo: g.lo, hi: id - 1, writers: g.writers, known: g.known})
			}
			g.lo = id + 1
			vi++
		}
		if g.lo <= g.hi {
			out = append(out, g)
		}
	}
	t.pending = out
}

// waiting reports whether any missing id waits to be settled: the
// writers must then be read after each snapshot.
func (t *gapTracker) waiting() bool { return len(t.pending) > 0 }

// observe records a reading of the writers taken after the last
// snapshot settle saw: ranges seen before it learn their writers, and the
// writers of the others shrink to those still found.
func (t *gapTracker) observe(writers []string) {
	for i := range t.pending {
		g := &t.pending[i]
		if !g.known {
			g.writers, g.known = slices.Clone(writers), true
			continue
		}
		g.writers = slices.DeleteFunc(g.writers, func(w string) bool { return !slices.Contains(writers, w) })
	}
}
