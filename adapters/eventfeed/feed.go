// Package eventfeed is the source of flagadmin's live streams
// (flagadmin.EventFeed): one reader per process follows the event log and
// hands each new event to every stream whose query matches it.
//
// The reader (Feed.Run) asks the store, every Options.Interval (250 ms by
// default), for the events after the last one it read (ExportEvents with
// afterID, as an admin sees them), so the database answers one small
// indexed query per interval however many streams are open. The store's
// ids are settled (flagadmin.Store.ExportEvents): once an id is read, no
// smaller one can appear, so the reader misses nothing.
//
// Each stream (Feed.Follow) has a buffer of Options.Buffer events. The
// reader never waits for a stream: when a stream's buffer is full, the
// stream is cut off. A stream that is still catching up from the store
// then catches up again; one that was already live has fallen behind and
// ends with flagadmin.ErrStreamEnded (its client reconnects with its last
// id and replays from the store). Memory is bounded by the buffers.
//
// A stream with a resume point first replays from the store the events
// after it, up to the reader's position when the stream joined, then
// takes its buffer, which holds exactly the events after that position:
// no gap, no duplicate.
package eventfeed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

var _ flagadmin.EventFeed = (*Feed)(nil)

// Source is what a Feed reads: the event log of a store. bunstore.Store
// and memstore.Store implement it.
type Source interface {
	// ExportEvents is flagadmin.Store.ExportEvents, whose ids must be settled.
	ExportEvents(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error
	// LastEventID returns the id of the newest event, 0 for none.
	LastEventID(ctx context.Context) (int64, error)
}

// Defaults of Options.
const (
	// DefaultInterval is how often the reader asks the store for new
	// events: a new event reaches the streams of every process sharing
	// the database within about this long.
	DefaultInterval = 250 * time.Millisecond
	// DefaultBuffer is how many events a stream may have waiting.
	DefaultBuffer = 1024
)

// maxBatch bounds the events handed to a stream in one call.
const maxBatch = 64

// maxCatchUps bounds how often a stream that is still replaying may be
// cut off and catch up again before it counts as too slow.
const maxCatchUps = 5

// Options configure a Feed. The zero value is usable.
type Options struct {
	// Interval between two reads of the store; 0 means DefaultInterval.
	Interval time.Duration
	// Buffer is the number of events a stream may have waiting; 0 means
	// DefaultBuffer.
	Buffer int
	// Logger receives the reader's storage failures. Nil discards them.
	Logger *slog.Logger
}

// Feed follows the event log of a Source and fans its events out to the
// streams that Follow it. Create it with New, run it with Run.
type Feed struct {
	src      Source
	interval time.Duration
	buffer   int
	log      *slog.Logger

	ready     chan struct{} // closed once pos is known
	readyOnce sync.Once
	done      chan struct{} // closed when Run has ended

	mu     sync.Mutex
	pos    int64 // the last id the reader has handed out
	subs   map[*subscriber]struct{}
	closed bool

	open, sent, dropped atomic.Int64
}

// subscriber is a stream's place in the feed.
type subscriber struct {
	q flagadmin.EventQuery
	// ch holds the events waiting for the stream, shared with the other
	// streams (a pointer each: buffers cost little until they fill).
	ch chan *flagadmin.Event
	// Set under Feed.mu. live: the stream has replayed and takes its
	// buffer. When the feed cuts the stream off, it closes ch and sets
	// cut, liveWhenCut, and ended when that is because the feed stopped.
	live, cut, liveWhenCut, ended bool
}

// Stats are the feed's counters, for metrics.
type Stats struct {
	// OpenStreams is the number of streams following the feed now.
	OpenStreams int64
	// EventsSent counts the events handed to streams (replayed or live).
	EventsSent int64
	// Dropped counts the streams ended because they fell behind.
	Dropped int64
}

// New returns a Feed over src. It reads nothing until Run.
func New(src Source, opts Options) *Feed {
	f := &Feed{src: src, interval: opts.Interval, buffer: opts.Buffer, log: opts.Logger,
		ready: make(chan struct{}), done: make(chan struct{}), subs: map[*subscriber]struct{}{}}
	if f.interval <= 0 {
		f.interval = DefaultInterval
	}
	if f.buffer <= 0 {
		f.buffer = DefaultBuffer
	}
	if f.log == nil {
		f.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return f
}

// Stats returns the feed's counters.
func (f *Feed) Stats() Stats {
	return Stats{OpenStreams: f.open.Load(), EventsSent: f.sent.Load(), Dropped: f.dropped.Load()}
}

// Run reads the store until ctx ends, then ends every stream
// (flagadmin.ErrStreamEnded) and returns nil. It starts from the newest
// event. A failed read is logged and tried again at the next interval;
// streams wait meanwhile.
func (f *Feed) Run(ctx context.Context) error {
	defer f.stop()
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	failing := false
	report := func(err error) {
		switch {
		case err == nil:
			if failing {
				f.log.Info("eventfeed: reading the event log again")
			}
			failing = false
		case ctx.Err() != nil:
		case !failing:
			f.log.Warn("eventfeed: cannot read the event log; retrying", "err", err)
			failing = true
		}
	}
	for {
		select {
		case <-f.ready:
			report(f.read(ctx))
		default:
			id, err := f.src.LastEventID(ctx)
			if err == nil {
				f.mu.Lock()
				f.pos = id
				f.mu.Unlock()
				f.readyOnce.Do(func() { close(f.ready) })
			}
			report(err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// read hands out every event after the reader's position.
func (f *Feed) read(ctx context.Context) error {
	f.mu.Lock()
	pos := f.pos
	f.mu.Unlock()
	return f.src.ExportEvents(ctx, flagadmin.EventQuery{}, pos, func(e flagadmin.Event) error {
		f.publish(&e)
		return nil
	})
}

// publish hands e to every stream whose query matches it, cutting off the
// streams whose buffer is full.
func (f *Feed) publish(e *flagadmin.Event) {
	var payload, meta string
	texts := false
	f.mu.Lock()
	defer f.mu.Unlock()
	if e.ID <= f.pos {
		return
	}
	f.pos = e.ID
	for sub := range f.subs {
		if sub.q.Text != "" && !texts {
			payload, meta = flagadmin.SearchTexts(*e)
			texts = true
		}
		if !sub.q.Matches(*e, payload, meta) {
			continue
		}
		select {
		case sub.ch <- e:
		default:
			sub.cut, sub.liveWhenCut = true, sub.live
			if sub.live {
				f.dropped.Add(1) // counted now: it may be stuck in a write for long
			}
			close(sub.ch)
			delete(f.subs, sub)
		}
	}
}

// stop ends every stream: the feed has stopped.
func (f *Feed) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for sub := range f.subs {
		sub.cut, sub.ended = true, true
		close(sub.ch)
		delete(f.subs, sub)
	}
	close(f.done)
}

// errStop ends a replay at the position the stream joined the feed.
var errStop = errors.New("eventfeed: replay done")

// ended is an error of kind flagadmin.ErrStreamEnded.
func ended(why string) error { return fmt.Errorf("%w: %s", flagadmin.ErrStreamEnded, why) }

// LastEventID implements flagadmin.EventFeed: the store's newest event.
func (f *Feed) LastEventID(ctx context.Context) (int64, error) { return f.src.LastEventID(ctx) }

// Follow implements flagadmin.EventFeed.
func (f *Feed) Follow(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func([]flagadmin.Event) error) error {
	select {
	case <-f.ready:
	case <-f.done:
		return ended("the server is shutting down")
	case <-ctx.Done():
		return ctx.Err()
	}
	f.open.Add(1)
	defer f.open.Add(-1)
	d := &deliverer{fn: fn, last: afterID, sent: &f.sent}
	for catchUps := 0; ; catchUps++ {
		sub := &subscriber{q: q, ch: make(chan *flagadmin.Event, f.buffer)}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return ended("the server is shutting down")
		}
		joined := f.pos
		f.subs[sub] = struct{}{}
		f.mu.Unlock()
		err := f.replay(ctx, q, joined, d)
		if err == nil {
			err = f.live(ctx, sub, d)
		}
		if !errors.Is(err, errCaughtUp) {
			f.leave(sub)
			return err
		}
		if catchUps == maxCatchUps {
			f.dropped.Add(1)
			return ended("the client reads more slowly than events arrive")
		}
	}
}

// errCaughtUp: the stream was cut off while it was replaying; it has
// taken what its buffer held and must replay again from there.
var errCaughtUp = errors.New("eventfeed: cut off while replaying")

// deliverer hands a stream its events in batches, each event once.
type deliverer struct {
	fn    func([]flagadmin.Event) error
	batch []flagadmin.Event
	// last is the id of the last event delivered (or the resume point).
	last int64
	sent *atomic.Int64
}

// add queues e unless it was delivered already, and delivers the batch
// once it is full.
func (d *deliverer) add(e *flagadmin.Event) error {
	if e.ID <= d.last || len(d.batch) > 0 && e.ID <= d.batch[len(d.batch)-1].ID {
		return nil
	}
	d.batch = append(d.batch, *e)
	if len(d.batch) >= maxBatch {
		return d.flush()
	}
	return nil
}

// flush delivers the queued events.
func (d *deliverer) flush() error {
	if len(d.batch) == 0 {
		return nil
	}
	if err := d.fn(d.batch); err != nil {
		return err
	}
	d.last = d.batch[len(d.batch)-1].ID
	d.sent.Add(int64(len(d.batch)))
	clear(d.batch) // the events are shared: drop the references
	d.batch = d.batch[:0]
	return nil
}

// replay delivers q's events after the last one delivered up to joined,
// from the store.
func (f *Feed) replay(ctx context.Context, q flagadmin.EventQuery, joined int64, d *deliverer) error {
	if d.last >= joined {
		return nil
	}
	err := f.src.ExportEvents(ctx, q, d.last, func(e flagadmin.Event) error {
		if e.ID > joined {
			return errStop
		}
		return d.add(&e)
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	if err != nil {
		return err
	}
	return d.flush()
}

// live delivers the events of sub's buffer, as many at once as are
// waiting, until ctx ends, the delivery fails or the feed cuts sub off.
func (f *Feed) live(ctx context.Context, sub *subscriber, d *deliverer) error {
	f.mu.Lock()
	sub.live = true
	f.mu.Unlock()
	for {
		var e *flagadmin.Event
		ok := true
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok = <-sub.ch:
		}
		for ok {
			if err := d.add(e); err != nil {
				return err
			}
			select {
			case e, ok = <-sub.ch:
				continue
			default:
			}
			break
		}
		if err := d.flush(); err != nil {
			return err
		}
		if ok {
			continue
		}
		f.mu.Lock()
		liveWhenCut, stopped := sub.liveWhenCut, sub.ended
		f.mu.Unlock()
		switch {
		case stopped:
			return ended("the server is shutting down")
		case liveWhenCut:
			return ended("the client reads more slowly than events arrive")
		}
		return errCaughtUp
	}
}

// leave takes sub out of the feed, if it is still in.
func (f *Feed) leave(sub *subscriber) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs, sub)
}
