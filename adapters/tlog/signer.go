package tlog

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// ErrInconsistent: the tree a store holds does not extend a checkpoint
// already signed: the newest one stored, or the one the server saved last
// in its state file. A Signer refuses to sign then, and from then on (until
// it is started again): a new checkpoint would vouch for the change.
var ErrInconsistent = errors.New("the log no longer matches its newest checkpoint")

// Signer signs checkpoints of a store's tree and stores them. Several
// servers sharing a store may sign at once with the same key: each
// checkpoint states the root of a prefix of one append-only tree, and
// Ed25519 signs the same statement with the same bytes, so the
// checkpoints agree whoever signed them. With a state file (KeepState) it
// also keeps the last checkpoint it signed outside the database, and
// never signs a tree that does not extend it. It is safe for concurrent
// use.
type Signer struct {
	store    vlog.Store
	prover   *Prover
	key      note.Signer
	verifier note.Verifier
	clock    func() time.Time

	mu sync.Mutex
	// state is the state file ("" for none) and saved the checkpoint it
	// holds (nil before the first).
	state string
	saved *vlog.Checkpoint
	// refused is why the Signer stopped signing, nil while it signs.
	refused error
}

// NewSigner returns a Signer over store with the signer key written by
// GenerateKey; clock is the time recorded with each checkpoint (nil for
// time.Now).
func NewSigner(store vlog.Store, prover *Prover, signerKey string, clock func() time.Time) (*Signer, error) {
	key, err := ParseSignerKey(signerKey)
	if err != nil {
		return nil, err
	}
	verifier, err := verifierOf(signerKey)
	if err != nil {
		return nil, err
	}
	if clock == nil {
		clock = time.Now
	}
	return &Signer{store: store, prover: prover, key: key, verifier: verifier, clock: clock}, nil
}

// verifierOf returns the verifier of a signer key written by GenerateKey
// ("PRIVATE+KEY+<name>+<hash>+<base64 of 1 and the Ed25519 seed>").
func verifierOf(signerKey string) (note.Verifier, error) {
	parts := strings.SplitN(strings.TrimSpace(signerKey), "+", 5)
	if len(parts) != 5 {
		return nil, errors.New("not a valid signing key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return nil, errors.New("not an Ed25519 signing key")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(parts[2], pub)
	if err != nil {
		return nil, fmt.Errorf("not a valid signing key: %v", err)
	}
	return note.NewVerifier(vkey)
}

// Origin returns the origin line of the checkpoints: the key's name.
func (s *Signer) Origin() string { return s.key.Name() }

// StateCreated says that KeepState found no state file: the Signer
// starts from the database's newest checkpoint (Size > 0) or from none.
type StateCreated struct {
	Size int64
}

// KeepState makes the Signer keep the last checkpoint it signed in the
// file path, outside the database, and refuse to sign a tree that does
// not extend it. It reads the file now: a file that is not a checkpoint
// of this key is an error. When there is none, the Signer starts from the
// store's newest checkpoint if its signature verifies with this key (else
// from none), writes the file, and returns a *StateCreated saying so.
func (s *Signer) KeepState(ctx context.Context, path string) (*StateCreated, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := readState(path)
	if err != nil {
		return nil, err
	}
	s.state = path
	if b != nil {
		cp, err := OpenCheckpoint(b, s.verifier)
		if err != nil {
			return nil, fmt.Errorf("the checkpoint state file %s: %v", path, err)
		}
		s.saved = &vlog.Checkpoint{Size: int64(cp.Size), Root: [32]byte(cp.Hash), Note: b}
		return nil, nil
	}
	created := &StateCreated{}
	latest, err := s.store.LatestCheckpoint(ctx)
	switch {
	case errors.Is(err, flagadmin.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		if cp, err := OpenCheckpoint(latest.Note, s.verifier); err == nil && int64(cp.Size) == latest.Size {
			if err := writeState(path, latest.Note); err != nil {
				return nil, err
			}
			s.saved, created.Size = &latest, latest.Size
		}
	}
	return created, nil
}

// Saved returns the checkpoint of the state file (KeepState), and false
// when there is none.
func (s *Signer) Saved() (vlog.Checkpoint, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.saved == nil {
		return vlog.Checkpoint{}, false
	}
	return *s.saved, true
}

// Refused returns why the Signer stopped signing (an error wrapping
// ErrInconsistent), nil while it signs.
func (s *Signer) Refused() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Sign signs and stores a checkpoint of the whole tree if it has grown
// since the newest checkpoint (or there is none), and returns the newest
// checkpoint with whether it signed it. Before signing it checks that the
// tree, recomputed from the store's leaves, still has the root of the
// newest stored checkpoint (when this key signed it) and of the one in
// the state file at their sizes: if not, it refuses, now and from then on, with an error wrapping
// ErrInconsistent. The state file is written before the store.
func (s *Signer) Sign(ctx context.Context) (vlog.Checkpoint, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	latest, own, err := s.latest(ctx)
	if err != nil {
		return vlog.Checkpoint{}, false, err
	}
	if s.refused != nil {
		return latest, false, s.refused
	}
	size, root, err := s.prover.Advance(ctx)
	if err != nil {
		return latest, false, err
	}
	base, err := s.base(ctx, latest, own, size)
	if err != nil {
		return latest, false, err
	}
	if base.Size == size {
		return base, false, nil
	}
	cp, err := s.signAndKeep(ctx, size, root)
	if err != nil {
		return base, false, err
	}
	return cp, true, nil
}

// latest returns the store's newest checkpoint (zero when there is none),
// and whether this key signed it: only a checkpoint of this key states
// what it signed, and another (a row written by hand, an old key's) is no
// base to extend.
func (s *Signer) latest(ctx context.Context) (vlog.Checkpoint, bool, error) {
	latest, err := s.store.LatestCheckpoint(ctx)
	switch {
	case errors.Is(err, flagadmin.ErrNotFound):
		return latest, false, nil
	case err != nil:
		return vlog.Checkpoint{}, false, err
	}
	cp, err := OpenCheckpoint(latest.Note, s.verifier)
	return latest, err == nil && int64(cp.Size) == latest.Size && [32]byte(cp.Hash) == latest.Root, nil
}

// base checks that the tree of size leaves extends the store's newest
// checkpoint (latest, when own: this key signed it) and the state file's,
// and returns the larger of them (Size -1 for none). The state file's,
// when the larger, is stored again: the database lost it.
func (s *Signer) base(ctx context.Context, latest vlog.Checkpoint, own bool, size int64) (vlog.Checkpoint, error) {
	base := vlog.Checkpoint{Size: -1}
	if own {
		if err := s.extends(ctx, latest, size, "the newest checkpoint in the database, signed at "+latest.SignedAt.UTC().Format(time.RFC3339)); err != nil {
			return base, err
		}
		base = latest
	}
	if s.saved == nil {
		return base, nil
	}
	if err := s.extends(ctx, *s.saved, size, "the checkpoint this server signed last (in "+s.state+")"); err != nil {
		return base, err
	}
	if s.saved.Size > base.Size {
		base = *s.saved
		if err := s.store.SaveCheckpoint(ctx, base); err != nil {
			return base, err
		}
	}
	return base, nil
}

// signAndKeep signs the checkpoint of the tree of size leaves with root,
// and keeps it: in the state file first, then in the store.
func (s *Signer) signAndKeep(ctx context.Context, size int64, root [32]byte) (vlog.Checkpoint, error) {
	cp, err := s.sign(size, root)
	if err != nil {
		return cp, err
	}
	if s.state != "" {
		if err := writeState(s.state, cp.Note); err != nil {
			return cp, err
		}
		s.saved = &cp
	}
	return cp, s.store.SaveCheckpoint(ctx, cp)
}

// extends checks that the tree of size leaves extends cp (named by what),
// and refuses to sign from then on when not.
func (s *Signer) extends(ctx context.Context, cp vlog.Checkpoint, size int64, what string) error {
	var why string
	if size < cp.Size {
		why = fmt.Sprintf("rollback: the log has %d events, fewer than the %d of %s: an older copy of the database was put back, or events were removed",
			size, cp.Size, what)
	} else {
		root, err := s.prover.CheckedRoot(ctx, cp.Size)
		if err == nil {
			err = s.prover.StoredAgrees(ctx, cp.Size, root)
		}
		switch {
		case errors.Is(err, ErrLeavesChanged):
			why = fmt.Sprintf("forged history: the log's leaves changed while the server read them; the first %d events no longer hash to the root of %s",
				cp.Size, what)
		case err != nil:
			return err
		case root != cp.Root:
			why = fmt.Sprintf("forged history: the first %d events no longer hash to the root of %s: the log was rewritten in the database, or an older copy put back and written to since (flagadmin log verify names the events)",
				cp.Size, what)
		default:
			return nil
		}
	}
	s.refused = refusal(why)
	return s.refused
}

// refusal is why a Signer stopped signing: of kind ErrInconsistent.
type refusal string

func (r refusal) Error() string        { return string(r) }
func (r refusal) Is(target error) bool { return target == ErrInconsistent }

// sign makes the checkpoint of a tree of size leaves with root.
func (s *Signer) sign(size int64, root [32]byte) (vlog.Checkpoint, error) {
	body := log.Checkpoint{Origin: s.key.Name(), Size: uint64(size), Hash: root[:]}.Marshal()
	signed, err := note.Sign(&note.Note{Text: string(body)}, s.key)
	if err != nil {
		return vlog.Checkpoint{}, fmt.Errorf("tlog: sign: %w", err)
	}
	return vlog.Checkpoint{Size: size, Root: root, Note: signed, SignedAt: flagadmin.Truncate(s.clock())}, nil
}
