// Package tlog is flagadmin's verifiable log and its retention over a
// store's leaves (vlog.Store): the Merkle tree of RFC 9162 and its
// proofs (Prover, with github.com/transparency-dev/merkle), signed
// checkpoints in the C2SP tlog-checkpoint format with Ed25519 keys
// (Signer, GenerateKey, with golang.org/x/mod/sumdb/note and
// github.com/transparency-dev/formats), their upkeep (Maintainer: the
// stored subtree hashes that make proofs cheap, a checkpoint at least every
// 10 s while the log grows), the witnesses that cosign checkpoints
// (Witnesses, the C2SP tlog-witness protocol, in the background),
// retention (Pruner), and the audit that recomputes the tree from the
// events (Verify).
//
// Against someone who can write the database but holds no key: a Signer
// keeps the last checkpoint it signed in a state file outside the
// database (KeepState) and refuses to sign a tree that does not extend
// it, and a Prover checks every proof it answers against the tree it
// recomputed from the leaves, replacing stored hashes that disagree with
// their leaves (checked.go).
//
// The domain owns the rules: the leaf hash (leaf.LeafHash) and the
// ports. Everything here can be rebuilt from the leaves a store keeps.
package tlog
