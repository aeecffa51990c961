// Package vlog is the verifiable log of the events (docs/verifiable-log.md):
// the events form an append-only Merkle tree as RFC 9162 (Certificate
// Transparency 2.0) defines it. Leaf n is the n-th event in id order, from
// 0, whatever the gaps in ids; its hash is adapters/tlog/leaf's LeafHash.
//
// Here are the log's model (Leaf, Checkpoint, Hold, the proofs), the ports
// it is kept and proved through (Store, which a store that keeps the log
// implements beside flagadmin.Store; Prover and ReadProver, which
// adapters/tlog implements with a Merkle library and a signature scheme),
// retention (the rule the log records, the legal holds, the events-pruned
// record of each pruning batch, and RetentionReplay, which accounts for
// every event retention removed), and Service, the log's operations of the
// admin API.
//
// The rules every operation shares stay in package flagadmin, which knows
// nothing of the log: Service is built over flagadmin.Service and each of
// its operations passes the domain's permission gate
// (flagadmin.Service.Authorize) once, first; an inclusion proof is given
// for an event the caller may see in a search (flagadmin.Service.VisibleQuery);
// holds and the retention rule write events of the domain's types
// (flagadmin.EventLogHoldAdded, ...) through the store, refused while the
// store is a read-only copy (flagadmin.Service.CheckWritable). This
// package imports flagadmin; flagadmin never imports it.
package vlog
