package tlog

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// GenerateKey returns a new Ed25519 key pair of the log named origin, as
// the note package writes them: the signer key
// ("PRIVATE+KEY+<origin>+<hash>+<key>", to keep secret) and the verifier
// key ("<origin>+<hash>+<key>", to publish). The origin is the first line of
// every checkpoint the key signs, such as flagadmin.example.com/log.
func GenerateKey(origin string) (signerKey, verifierKey string, err error) {
	if err := CheckOrigin(origin); err != nil {
		return "", "", err
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		return "", "", fmt.Errorf("tlog: generate key: %w", err)
	}
	return skey, vkey, nil
}

// CheckOrigin checks a log's origin: not empty, without white space or +
// (it is the name of the note keys).
func CheckOrigin(origin string) error {
	switch {
	case origin == "":
		return errors.New("the origin is empty")
	case strings.ContainsFunc(origin, unicode.IsSpace), strings.Contains(origin, "+"):
		return fmt.Errorf("the origin %q has white space or a +; use a name such as flagadmin.example.com/log", origin)
	}
	return nil
}

// ParseSignerKey reads a signer key written by GenerateKey (surrounding
// white space allowed).
func ParseSignerKey(text string) (note.Signer, error) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "PRIVATE+KEY+") {
		return nil, errors.New("not a signing key (it should start with PRIVATE+KEY+; flagadmin log keygen writes one)")
	}
	s, err := note.NewSigner(text)
	if err != nil {
		return nil, fmt.Errorf("not a valid signing key: %v", err)
	}
	return s, nil
}

// ParseVerifierKey reads a verifier key written by GenerateKey (surrounding
// white space allowed).
func ParseVerifierKey(text string) (note.Verifier, error) {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "PRIVATE+KEY+") {
		return nil, errors.New("this is the signing key, which must stay secret; give the verifier key (the .pub file)")
	}
	v, err := note.NewVerifier(text)
	if err != nil {
		return nil, fmt.Errorf("not a valid verifier key: %v", err)
	}
	return v, nil
}

// OpenCheckpoint checks the signature of a checkpoint note with v and
// returns what it states: its origin must be v's name.
func OpenCheckpoint(text []byte, v note.Verifier) (log.Checkpoint, error) {
	cp, _, _, err := log.ParseCheckpoint(text, v.Name(), v)
	if err != nil {
		return log.Checkpoint{}, fmt.Errorf("the checkpoint does not verify with the key of %s: %v", v.Name(), err)
	}
	if len(cp.Hash) != 32 {
		return log.Checkpoint{}, fmt.Errorf("the checkpoint's root hash has %d bytes, want 32", len(cp.Hash))
	}
	return *cp, nil
}
