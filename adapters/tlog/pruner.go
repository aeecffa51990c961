package tlog

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// Defaults of a Pruner.
const (
	// DefaultPruneBatch is the most events one store call prunes.
	DefaultPruneBatch = 500
	// DefaultPruneBudget is how long one store call should take: the
	// pruner sizes its batches to it, so that a writer that waits behind
	// a batch (on SQLite, whose one writer connection runs them in turns)
	// never waits long.
	DefaultPruneBudget = 25 * time.Millisecond
	// DefaultPrunePause is the pause between two full batches, which lets
	// writers in between them.
	DefaultPrunePause = 20 * time.Millisecond
	// DefaultPruneInterval is the pause once nothing is left to prune.
	DefaultPruneInterval = time.Minute
)

// firstPruneBatch is the size of a Pruner's first batch, before it has
// timed one.
const firstPruneBatch = 16

// leastPruneBatch is the fewest events a batch is shrunk to (or Batch,
// when smaller): on a machine so busy that even a few events take longer
// than the budget, fewer would only slow the pruning down, the batch's
// cost being mostly its statements, not its events.
const leastPruneBatch = 50

// PrunerOptions configure a Pruner.
type PrunerOptions struct {
	// Batch is the most events one store call prunes; 0 means
	// DefaultPruneBatch.
	Batch int
	// Budget is how long one store call should take; 0 means
	// DefaultPruneBudget. Each batch is sized from the time the one before
	// took, in proportion to the budget: from half as large to twice as
	// large, never below 50 events nor above Batch.
	Budget time.Duration
	// Pause between full batches; 0 means DefaultPrunePause.
	Pause time.Duration
	// Interval between passes once nothing is left to prune; 0 means
	// DefaultPruneInterval.
	Interval time.Duration
	// Clock is the current time; nil means time.Now.
	Clock func() time.Time
	// Logger receives each pass that pruned something and failures (once
	// per run of failures); nil discards them.
	Logger *slog.Logger
}

// Pruner removes the events older than the retention rule the log
// records (the newest retention-changed event, which a server records
// when it starts with a --retention other than the one recorded), in
// small batches (vlog.Store.PruneEvents, which reads the rule in
// each batch's transaction): never the events of a project under a legal
// hold, nor retention's own events, and never their leaves. Each batch
// that removes events records them in an events-pruned event
// (vlog.PrunedEvent) in its own transaction, with the rule it read.
// So the pruners of several servers on one database, whatever rule each
// started with, prune by the one rule "flagadmin log verify" holds them
// to, and none while the log records no rule, or keeping events for ever.
type Pruner struct {
	store vlog.Store
	opts  PrunerOptions
	// pruned counts the events removed; rule is the retention the last
	// batch read (0: for ever, or none read yet).
	pruned, rule atomic.Int64
	// size is the next batch's size; passes run one at a time.
	size int
	// since is how long ago a time was (time.Since; tests change it).
	since func(time.Time) time.Duration
}

// NewPruner returns a Pruner of the events of store.
func NewPruner(store vlog.Store, opts PrunerOptions) *Pruner {
	if opts.Batch <= 0 {
		opts.Batch = DefaultPruneBatch
	}
	if opts.Budget <= 0 {
		opts.Budget = DefaultPruneBudget
	}
	if opts.Pause <= 0 {
		opts.Pause = DefaultPrunePause
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultPruneInterval
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Pruner{store: store, opts: opts, size: min(firstPruneBatch, opts.Batch), since: time.Since}
}

// Pruned returns how many events this Pruner has removed.
func (p *Pruner) Pruned() int64 { return p.pruned.Load() }

// Rule returns the retention the last batch read in the log: 0 when it
// keeps events for ever, or before the first batch.
func (p *Pruner) Rule() time.Duration { return time.Duration(p.rule.Load()) }

// Pass prunes batch after batch, with a pause between them, until a batch
// comes back short (nothing older is left, or no retention is in force)
// or ctx ends, and returns how many events it removed. It sizes each
// batch to the budget from the time the one before took.
func (p *Pruner) Pass(ctx context.Context) (int64, error) {
	var n int64
	for {
		size := p.size
		start := time.Now()
		ids, err := p.batch(ctx, size)
		p.size = nextBatch(size, p.since(start), p.opts.Budget, p.opts.Batch)
		n += int64(len(ids))
		p.pruned.Add(int64(len(ids)))
		if err != nil || len(ids) < size {
			return n, err
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(p.opts.Pause):
		}
	}
}

// batch prunes at most size events by the rule the store reads in the
// batch's transaction, at the time the clock says then.
func (p *Pruner) batch(ctx context.Context, size int) ([]int64, error) {
	var now, before time.Time
	var rule time.Duration
	return p.store.PruneEvents(ctx, size, func(last *flagadmin.Event) (time.Time, error) {
		r, err := vlog.RecordedRetention(last)
		if err != nil {
			return time.Time{}, err
		}
		p.rule.Store(int64(r))
		if r <= 0 {
			return time.Time{}, nil
		}
		now, rule = p.opts.Clock(), r
		before = vlog.PruneBefore(now, rule)
		return before, nil
	}, func(ids []int64) (flagadmin.Event, error) {
		return vlog.PrunedEvent(ids, before, rule, now)
	})
}

// nextBatch is the size of the batch after one of size that took took:
// in proportion to the budget, from half size to twice size, from
// leastPruneBatch to most. Halving at most keeps one stall (a batch that
// waited for the database, not for its own work) from shrinking the
// batches to nothing.
func nextBatch(size int, took, budget time.Duration, most int) int {
	next := 2 * size
	if took > 0 {
		next = min(next, int(int64(size)*int64(budget)/int64(took)))
	}
	return min(most, max(leastPruneBatch, size/2, next))
}

// Run makes passes until ctx ends: one at once, then one every Interval.
// It logs the rule it prunes by when it reads one other than before.
func (p *Pruner) Run(ctx context.Context) {
	failing := false
	logged := time.Duration(0)
	for {
		start := time.Now()
		n, err := p.Pass(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			failing = true
			p.opts.Logger.Error("retention: cannot prune events", "err", err)
		case err == nil:
			if failing {
				failing = false
				p.opts.Logger.Info("retention: pruning again")
			}
			if rule := p.Rule(); rule != logged {
				logged = rule
				p.opts.Logger.Info("retention: pruning by the rule recorded in the log", "keep", RuleText(rule))
			}
			if n > 0 {
				p.opts.Logger.Info("retention: pruned events", "events", n, "olderThan", p.Rule().String(), "took", time.Since(start).Round(time.Millisecond).String())
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.opts.Interval):
		}
	}
}

// RuleText says a retention as the server's messages do: "for ever" for
// 0, a Go duration otherwise.
func RuleText(retention time.Duration) string {
	if retention <= 0 {
		return "for ever"
	}
	return retention.String()
}
