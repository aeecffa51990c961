package unleashimport

import (
	"context"
	"slices"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
)

// A poll, the step that follows, in four steps of its own:
//
//	read      the events after the position (one statement, one
//	          snapshot; while a backlog is read, begun as the poll
//	          before applied its batch: readAhead), and the reading of
//	          the world if one ended
//	settle    what can be delivered: the events before one whose
//	          project must wait for the world (heldProject), up to the
//	          first missing id that is not settled (gaps.go, with the
//	          writers read after the snapshot); the next reading of the
//	          world, when due; how far behind the source the copy is
//	apply     the settled prefix, the world's changes and the position,
//	          in one store transaction (when anything changed)
//	schedule  how long to wait before the next poll
//
// A pollRound carries what each step found to the next.

// pollRound is one poll as it goes through its steps.
type pollRound struct {
	at    time.Time // when the poll began
	limit int       // how many events it reads at most

	// read
	events []flagadmin.Event // the events read, mapped (a skipped one has an id and no event)
	ids    []int64           // every id read, ascending
	next   *worldReading     // a reading of the world that ended: applied with these events

	// settle
	world   *worldState // the world the events' projects are known from (nil: the store's)
	worldAt time.Time   // when the reading of world began
	held    int         // the index in events of the first one that waits for the world
	settled settlement  // the gap rule's decision
	deliver []flagadmin.Event
	lag     int64 // the events the source has beyond the new position
}

// full reports whether the poll read as many events as it may: more may
// wait.
func (p *pollRound) full() bool { return len(p.ids) == p.limit }

// poll reads the events after the position (and the world when due),
// settles what it can, and applies it with the new position.
func (l *followLoop) poll(ctx context.Context) (time.Duration, error) {
	rctx, cancel := context.WithTimeout(ctx, l.opts.ReadTimeout)
	defer cancel()
	p := &pollRound{at: l.opts.Now(), limit: l.opts.BatchSize}
	if !l.blocked.IsZero() {
		// Waiting on a missing id: what matters is that id (and the
		// writers); a small read sees it arrive without reading a whole
		// batch again and again.
		p.limit = min(p.limit, blockedBatch)
	}
	if err := l.read(rctx, p); err != nil {
		return l.readFailed(ctx, err)
	}
	if err := l.settle(ctx, rctx, p); err != nil {
		return l.readFailed(ctx, err)
	}
	if p.backlog() {
		l.readAhead(ctx, p.settled.position)
	}
	if err := l.apply(ctx, p); err != nil {
		l.dropAhead()
		return l.applyFailed(ctx, err), nil
	}
	return l.schedule(p), nil
}

// backlog reports whether the poll found a backlog: it read as many
// events as it may and delivered some, none missing, so the next poll
// follows at once, reading as many again.
func (p *pollRound) backlog() bool {
	return p.full() && p.settled.deliver > 0 && p.settled.waitingFor == 0
}

// aheadRead is the source's events read for the next poll while a poll
// applies its batch (readAhead).
type aheadRead struct {
	after  int64     // the position read after
	limit  int       // how many events it read at most
	at     time.Time // when it began
	done   chan struct{}
	events []flagadmin.Event
	ids    []int64
	err    error
}

// readAhead begins reading the events after the position a batch being
// applied moves to: while a backlog is read, the source's read and the
// mapping of its rows then take no time of their own. The next poll takes
// it (takeAhead) if it reads from that position; anything else that uses
// the source's connection drops it first (dropAhead).
func (l *followLoop) readAhead(ctx context.Context, after int64) {
	a := &aheadRead{after: after, limit: l.opts.BatchSize, at: l.opts.Now(), done: make(chan struct{})}
	src := l.src
	go func() {
		defer close(a.done)
		rctx, cancel := context.WithTimeout(ctx, l.opts.ReadTimeout)
		defer cancel()
		a.events, a.ids, a.err = src.eventsAfter(rctx, after, a.limit)
	}()
	l.ahead = a
}

// takeAhead waits for the read begun ahead, if any, and returns it; nil
// when none was begun.
func (l *followLoop) takeAhead() *aheadRead {
	a := l.ahead
	if a != nil {
		<-a.done
		l.ahead = nil
	}
	return a
}

// dropAhead waits for the read begun ahead, if any, and forgets it.
func (l *followLoop) dropAhead() { l.takeAhead() }

// read reads the events after the position (or takes those read ahead
// from it), and takes the reading of the world if it ended meanwhile.
func (l *followLoop) read(ctx context.Context, p *pollRound) error {
	var err error
	if a := l.takeAhead(); a != nil && a.after == l.position && a.limit == p.limit {
		p.at, p.events, p.ids, err = a.at, a.events, a.ids, a.err
	} else {
		p.events, p.ids, err = l.src.eventsAfter(ctx, l.position, p.limit)
	}
	if err != nil {
		return err
	}
	if r := l.world.collect(); r != nil {
		if r.err != nil {
			return r.err
		}
		p.next = r
	}
	return nil
}

// settle decides what the poll delivers and what it reads next: the
// events before the first that waits for the world and up to the first
// missing id not settled; a reading of the world when one is due; the
// writers of the events table while an id is missing; and the lag.
// Store reads run on ctx, source reads on rctx.
func (l *followLoop) settle(ctx, rctx context.Context, p *pollRound) error {
	// Delivery stops before an event whose project must wait for the
	// world (its id and those above are read again).
	p.world, p.worldAt = l.prev, l.worldAt
	if p.next != nil {
		p.world, p.worldAt = p.next.world, p.next.began
	}
	p.held = l.heldProject(ctx, p.events, p.at, p.world, p.worldAt)
	settled := p.ids
	if p.held < len(p.events) {
		settled = p.ids[:slices.Index(p.ids, p.events[p.held].ID)]
	}
	p.settled = l.gaps.settle(l.position, settled)
	p.deliver = p.events[:p.held]
	for i, e := range p.deliver {
		if e.ID > p.settled.position {
			p.deliver = p.deliver[:i]
			break
		}
	}
	l.announced = l.announced || len(p.ids) > 0
	l.readWorldWhenDue(ctx, p)
	if l.gaps.waiting() {
		writers, err := l.src.writers(rctx)
		if err != nil {
			return err
		}
		l.gaps.observe(writers)
	}
	switch {
	case p.full():
		newest, err := l.src.newestEventID(rctx)
		if err != nil {
			return err
		}
		p.lag = newest - p.settled.position
	case len(p.ids) > 0:
		p.lag = p.ids[len(p.ids)-1] - p.settled.position
	}
	return nil
}

// apply writes what settle decided, in one store transaction: the events
// delivered, the world's changes, the new position and, when the copy is
// caught up, when it was; a poll that changes nothing writes nothing
// (but the time of a caught-up copy, every SyncEvery).
func (l *followLoop) apply(ctx context.Context, p *pollRound) error {
	b := &follow.Batch{Events: p.deliver, Position: p.settled.position, Holes: l.holes + p.settled.holes}
	if p.next != nil {
		diffInto(b, l.prev, p.next.world)
	}
	caughtUp := p.lag == 0
	if caughtUp {
		b.SyncedAt = flagadmin.Truncate(p.at)
	}
	if b.Changes() || b.Position != l.position || (caughtUp && p.at.Sub(l.stored) >= l.opts.SyncEvery) {
		if !l.applying && l.opts.BeforeApplying != nil {
			l.opts.BeforeApplying(ctx)
		}
		l.applying = true
		if err := l.store.ApplyFollow(ctx, l.opts.Holder, l.opts.Now(), b); err != nil {
			return err
		}
		if !b.SyncedAt.IsZero() {
			l.stored = b.SyncedAt
		}
	}
	l.recovered()
	l.applied.Add(int64(len(p.deliver)))
	l.position, l.holes = p.settled.position, b.Holes
	if p.next != nil {
		l.prev, l.worldAt = p.next.world, p.next.began
	}
	l.setStatus(func(st *follow.Status) {
		st.State, st.Reason, st.Ready = follow.Following, "", true
		st.Position, st.Holes, st.LagEvents, st.WaitingFor = l.position, l.holes, p.lag, p.settled.waitingFor
		if caughtUp {
			t := flagadmin.Truncate(p.at)
			st.SyncedAt = &t
		}
	})
	return nil
}

// schedule returns how long to wait before the next poll: none while a
// backlog is read, a little while a missing id may still commit (longer
// the longer it stays missing), else PollInterval.
func (l *followLoop) schedule(p *pollRound) time.Duration {
	switch {
	case p.settled.waitingFor == 0:
		l.blocked = time.Time{}
	case l.blocked.IsZero():
		l.blocked = p.at
	}
	switch {
	case p.full() && p.settled.deliver > 0:
		return 0 // a backlog: read on at once
	case p.settled.waitingFor != 0:
		// A transaction may still commit the missing id: look again soon,
		// less often the longer it stays open.
		switch waited := p.at.Sub(l.blocked); {
		case waited < time.Second:
			return min(25*time.Millisecond, l.opts.PollInterval)
		case waited < 10*time.Second:
			return l.opts.PollInterval
		default:
			return max(l.opts.PollInterval, time.Second)
		}
	}
	return l.opts.PollInterval
}

// worldReads are the readings of the world, one at a time, each on the
// world's own connection while polls go on.
type worldReads struct {
	idle    followSource       // the world's connection between readings (nil: none open)
	reading chan worldReading  // the reading in progress (nil: none)
	cancel  context.CancelFunc // cancels the reading in progress
	last    time.Time          // when the last reading began
}

// worldReading is the outcome of a reading of the world on its own
// connection (startWorld).
type worldReading struct {
	world *worldState
	began time.Time
	err   error
	// src is the world's connection, to reuse; nil after a failure (closed).
	src followSource
}

// collect returns the reading that ended, if one did (its connection is
// idle again); nil while one runs or none was begun.
func (w *worldReads) collect() *worldReading {
	if w.reading == nil {
		return nil
	}
	select {
	case r := <-w.reading:
		w.reading, w.idle = nil, r.src
		return &r
	default:
		return nil
	}
}

// close cancels the reading in progress, waits for it, and closes the
// world's connection.
func (w *worldReads) close() {
	if w.reading != nil {
		w.cancel()
		r := <-w.reading
		w.reading = nil
		if r.src != nil {
			r.src.Close()
		}
	}
	if w.idle != nil {
		w.idle.Close()
		w.idle = nil
	}
}

// readWorldWhenDue begins a reading of the world when none runs and one
// is due: none was applied since this server took the lease, the last
// began StateInterval ago (MinStateInterval when events were read since),
// or an event waits for one.
func (l *followLoop) readWorldWhenDue(ctx context.Context, p *pollRound) {
	if l.world.reading != nil {
		return
	}
	since := l.opts.Now().Sub(l.world.last)
	if p.world == nil || since >= l.opts.StateInterval || (l.announced && since >= l.opts.MinStateInterval) || p.held < len(p.events) {
		l.startWorld(ctx, l.opts.Now(), p.world)
		l.announced = false
	}
}

// startWorld begins a reading of the world on the world's connection
// (opened when none is, by worldConnection), in a goroutine of its own;
// its outcome arrives on l.world.reading. prev is the world as last
// applied, whose flags the reading keeps when they did not change.
func (l *followLoop) startWorld(ctx context.Context, began time.Time, prev *worldState) {
	src, open, started := l.world.idle, l.worldConnection(), l.started
	ch := make(chan worldReading, 1)
	rctx, cancel := context.WithTimeout(ctx, l.opts.ReadTimeout)
	l.world = worldReads{reading: ch, cancel: cancel, last: began}
	go func() {
		defer cancel()
		r := worldReading{began: began}
		if src == nil {
			src, r.err = open(rctx)
		}
		if r.err == nil {
			r.world, r.err = src.readWorldNow(rctx, started, prev)
		}
		if r.err != nil && src != nil {
			src.Close()
			src = nil
		}
		r.src = src
		ch <- r
	}()
}

// worldConnection returns how the world's connection is opened: checked as
// connect checks the events' (the source the events are read from, with
// what the follower reads of its schema). It captures what it needs, to
// run beside the steps.
func (l *followLoop) worldConnection() func(context.Context) (followSource, error) {
	open, name, want, readSet := l.open, l.name, l.source, l.readSet
	return func(ctx context.Context) (followSource, error) {
		src, err := open(ctx)
		if err != nil {
			return nil, err
		}
		id, err := src.identity(ctx, name)
		if err == nil && !id.Same(want) {
			err = stopf("the connection to %s for its flags and tokens reached another database (%q of system %s) than its events (%q of system %s)",
				name, id.Database, id.SystemID, want.Database, want.SystemID)
		} else if err == nil {
			err = stillHas(readSet, src.schema(), name)
		}
		if err != nil {
			src.Close()
			return nil, err
		}
		return src, nil
	}
}

// heldEvent is the first event of a project the copy does not know, and
// when a poll first read it: delivery stops before it until a reading of
// the world begun after then has been applied.
type heldEvent struct {
	id   int64
	seen time.Time
}

// heldProject returns the index in events of the first event whose
// project the copy does not know yet and that must wait for the world
// (len(events) when none). An event waits until a reading of the world
// begun after the event was first read is applied: a project created
// with it (private, perhaps) is then known, and its visibility with it.
// A project that reading did not find either no longer exists in Unleash
// (events outlive their project): its events are delivered, and later
// ones too (l.absent), until an event says it was created again. Before
// the first reading since this server took the lease (world nil), the
// projects the store holds are the ones the copy knows.
func (l *followLoop) heldProject(ctx context.Context, events []flagadmin.Event, at time.Time, world *worldState, worldAt time.Time) int {
	stored := storedProjects{ctx: ctx, store: l.store, known: map[string]bool{}}
	for i, e := range events {
		if l.waitsForWorld(e, at, world, worldAt, stored.has) {
			return i
		}
	}
	return len(events)
}

// waitsForWorld reports whether e must wait for the world (heldProject),
// read at at; inStore tells whether the store holds a project.
func (l *followLoop) waitsForWorld(e flagadmin.Event, at time.Time, world *worldState, worldAt time.Time, inStore func(string) bool) bool {
	if e.Project == nil || *e.Project == "" {
		return false
	}
	project := *e.Project
	if e.Type == flagadmin.EventProjectCreated {
		delete(l.absent, project)
	}
	if world != nil {
		if _, known := world.projects[project]; known || l.absent[project] {
			return false
		}
	} else if e.Type != flagadmin.EventProjectCreated && inStore(project) {
		return false
	}
	if e.ID == l.held.id && world != nil && worldAt.After(l.held.seen) {
		// Read before a reading of the world that did not find its
		// project.
		if l.absent == nil {
			l.absent = map[string]bool{}
		}
		l.absent[project] = true
		return false
	}
	if e.ID != l.held.id {
		l.held = heldEvent{id: e.ID, seen: at}
	}
	return true
}

// storedProjects tells which projects the store holds, asking it once per
// project.
type storedProjects struct {
	ctx   context.Context
	store FollowStore
	known map[string]bool
}

func (s storedProjects) has(id string) bool {
	known, asked := s.known[id]
	if !asked {
		_, err := s.store.Project(s.ctx, id)
		known = err == nil // not found, or not answering: wait for the world
		s.known[id] = known
	}
	return known
}
