package tlog

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// DefaultMaintainInterval is how often a Maintainer looks at the log: half
// the 10 s within which a growing log gets a new checkpoint.
const DefaultMaintainInterval = 5 * time.Second

// MaintainerOptions configure a Maintainer.
type MaintainerOptions struct {
	// Interval between rounds; 0 means DefaultMaintainInterval.
	Interval time.Duration
	// Logger receives failures (once per run of failures) and recoveries;
	// nil discards them.
	Logger *slog.Logger
	// Witnesses, when not nil, are handed the newest checkpoint after
	// each round (Witnesses.Submit, which returns at once: the witnesses
	// are asked in the background, by Witnesses.Run).
	Witnesses *Witnesses
}

// Maintainer keeps a store's tree served well: each round stores the
// subtree hashes the new leaves complete (Prover.BuildTiles) and, with a
// Signer, signs a checkpoint when the log has grown, and hands the newest
// to the witnesses. Run does a round at
// once and then every Interval.
type Maintainer struct {
	prover    *Prover
	signer    *Signer
	witnesses *Witnesses
	interval  time.Duration
	log       *slog.Logger

	mu     sync.Mutex
	latest vlog.Checkpoint
	known  bool
	failed string // the message of the failure being reported, "" when none
	signed int64
}

// NewMaintainer returns a Maintainer of prover's tree; signer may be nil
// (no checkpoints: the server has no key).
func NewMaintainer(prover *Prover, signer *Signer, opts MaintainerOptions) *Maintainer {
	m := &Maintainer{prover: prover, signer: signer, witnesses: opts.Witnesses, interval: opts.Interval, log: opts.Logger}
	if m.interval <= 0 {
		m.interval = DefaultMaintainInterval
	}
	if m.log == nil {
		m.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return m
}

// Run does rounds until ctx ends.
func (m *Maintainer) Run(ctx context.Context) {
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		m.Round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Round stores the new subtree hashes and, with a signer, signs a
// checkpoint if the log grew. A failure to store subtree hashes does not
// stop the signing (they only speed proofs up). The first of a run of
// failures is logged, and the recovery.
func (m *Maintainer) Round(ctx context.Context) error {
	err := m.round(ctx)
	m.report(err)
	return err
}

func (m *Maintainer) round(ctx context.Context) error {
	tilesErr := m.prover.BuildTiles(ctx)
	if m.signer == nil {
		_, _, err := m.prover.Advance(ctx)
		return errors.Join(err, tilesErr)
	}
	cp, signed, err := m.signer.Sign(ctx)
	if cp.Note != nil {
		m.mu.Lock()
		m.latest, m.known = cp, true
		if signed {
			m.signed++
		}
		m.mu.Unlock()
		if m.witnesses != nil {
			m.witnesses.Submit(cp)
		}
	}
	return errors.Join(err, tilesErr)
}

// report logs the first of a run of failures, and the recovery.
func (m *Maintainer) report(err error) {
	if err != nil && errors.Is(err, context.Canceled) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err != nil && err.Error() != m.failed && errors.Is(err, ErrInconsistent):
		m.failed = err.Error()
		m.log.Error("log: refusing to sign checkpoints; serving goes on", "problem", err)
	case err != nil && err.Error() != m.failed:
		m.failed = err.Error()
		m.log.Error("log: cannot keep the verifiable log", "err", err)
	case err == nil && m.failed != "":
		m.failed = ""
		m.log.Info("log: the verifiable log is kept again")
	}
}

// Latest returns the newest checkpoint a round has seen, and false before
// any (or without a signer).
func (m *Maintainer) Latest() (vlog.Checkpoint, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.latest, m.known
}

// Refused returns why the signer stopped signing (an error wrapping
// ErrInconsistent), nil while it signs or without a signer.
func (m *Maintainer) Refused() error {
	if m.signer == nil {
		return nil
	}
	return m.signer.Refused()
}

// Signed returns how many checkpoints this Maintainer has signed.
func (m *Maintainer) Signed() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.signed
}
