package tlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// ErrInconsistent: the tree a store holds no longer has the root of the
// newest stored checkpoint at that checkpoint's size, so its leaves were
// changed since it was signed. A Signer refuses to sign then: a new
// checkpoint would vouch for the change.
var ErrInconsistent = errors.New("the log no longer matches its newest checkpoint")

// Signer signs checkpoints of a store's tree and stores them. Several
// servers sharing a store may sign at once with the same key: each
// checkpoint states the root of a prefix of one append-only tree, and
// Ed25519 signs the same statement with the same bytes, so the
// checkpoints agree whoever signed them. It is safe for concurrent use.
type Signer struct {
	store  flagadmin.LogStore
	prover *Prover
	key    note.Signer
	clock  func() time.Time
}

// NewSigner returns a Signer over store with the signer key written by
// GenerateKey; clock is the time recorded with each checkpoint (nil for
// time.Now).
func NewSigner(store flagadmin.LogStore, prover *Prover, signerKey string, clock func() time.Time) (*Signer, error) {
	key, err := ParseSignerKey(signerKey)
	if err != nil {
		return nil, err
	}
	if clock == nil {
		clock = time.Now
	}
	return &Signer{store: store, prover: prover, key: key, clock: clock}, nil
}

// Origin returns the origin line of the checkpoints: the key's name.
func (s *Signer) Origin() string { return s.key.Name() }

// Sign signs and stores a checkpoint of the whole tree if it has grown
// since the newest stored checkpoint (or none is stored), and returns the
// newest checkpoint with whether it signed it. Before signing it checks
// that the tree still has the root of the newest checkpoint at its size:
// if not, it signs nothing and returns an error of kind ErrInconsistent.
func (s *Signer) Sign(ctx context.Context) (flagadmin.Checkpoint, bool, error) {
	latest, err := s.store.LatestCheckpoint(ctx)
	found := err == nil
	if err != nil && !errors.Is(err, flagadmin.ErrNotFound) {
		return flagadmin.Checkpoint{}, false, err
	}
	size, err := s.store.LogSize(ctx)
	if err != nil {
		return flagadmin.Checkpoint{}, false, err
	}
	if found {
		if size == latest.Size {
			return latest, false, nil
		}
		if size < latest.Size {
			return latest, false, fmt.Errorf("%w: the log has %d leaves, fewer than the %d of the checkpoint signed at %s",
				ErrInconsistent, size, latest.Size, latest.SignedAt.UTC().Format(time.RFC3339))
		}
		root, err := s.prover.RootHash(ctx, latest.Size)
		if err != nil {
			return latest, false, err
		}
		if root != latest.Root {
			return latest, false, fmt.Errorf("%w: its first %d leaves no longer hash to the root of the checkpoint signed at %s (run flagadmin log verify)",
				ErrInconsistent, latest.Size, latest.SignedAt.UTC().Format(time.RFC3339))
		}
	}
	root, err := s.prover.RootHash(ctx, size)
	if err != nil {
		return latest, false, err
	}
	cp, err := s.sign(size, root)
	if err != nil {
		return latest, false, err
	}
	if err := s.store.SaveCheckpoint(ctx, cp); err != nil {
		return latest, false, err
	}
	return cp, true, nil
}

// sign makes the checkpoint of a tree of size leaves with root.
func (s *Signer) sign(size int64, root [32]byte) (flagadmin.Checkpoint, error) {
	body := log.Checkpoint{Origin: s.key.Name(), Size: uint64(size), Hash: root[:]}.Marshal()
	signed, err := note.Sign(&note.Note{Text: string(body)}, s.key)
	if err != nil {
		return flagadmin.Checkpoint{}, fmt.Errorf("tlog: sign: %w", err)
	}
	return flagadmin.Checkpoint{Size: size, Root: root, Note: signed, SignedAt: flagadmin.Truncate(s.clock())}, nil
}
