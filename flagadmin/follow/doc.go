// Package follow holds what following a live Unleash database needs from
// the domain (docs/following-unleash.md): a store keeps a copy of an
// Unleash database's world and its event log, kept current by a follower
// (adapters/unleashimport.Follower) that reads Unleash and writes through
// the port of this package (Target). Here are the follow state a store
// keeps (State, with the follow lease), the batch a follower applies
// (Batch), that port, and the status a follower reports (Status).
//
// The rules of the admin API stay in package flagadmin, which knows
// nothing of following: a store that follows says so through
// flagadmin.ReadOnlyReporter (ReadOnly implements it over a StateReader),
// and the Service refuses its writes while it does. This package imports
// flagadmin for the model, the events and the lease; flagadmin never
// imports it.
package follow
