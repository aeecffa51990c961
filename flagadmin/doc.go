// Package flagadmin holds the rules of flagadmin's administrative API, a
// wire-compatible implementation of five operations of Unleash's admin API:
// completing a feature's lifecycle, searching the event log (by query string
// and by the deprecated request body), listing projects and deleting a service
// account; and of two operations of its own, the export and the live stream
// of the event log.
//
// The package is the product; everything else is an adapter. It defines the
// model (Event, Project, Feature, User, APIToken...), the parsing of search
// filters and paging limits, authentication of Authorization header values,
// the permission table and visibility rules, and a Service that performs the
// operations for a Principal. Storage is a port (Store) implemented by
// adapters/memstore (in memory) and adapters/bunstore (PostgreSQL, MySQL,
// SQLite); the HTTP transport lives in adapters/httpapi.
//
// Every failure the Service returns is one of a few kinds, checked with
// errors.Is: ErrAuthenticationRequired, ErrNoAccess, ErrNotFound,
// ErrValidation (as a *ValidationError naming the parameter), ErrConflict,
// ErrUnavailable and ErrReadOnly (a write to a store that follows an
// Unleash database, readonly.go). A transport maps these kinds to statuses in
// one place.
//
// Following a live Unleash database (its follow state and lease, the
// batches a follower applies, the follower's status) is package
// flagadmin/follow, which imports this one; a store that follows tells the
// Service only that it is a read-only copy (ReadOnlyReporter).
//
// The verifiable log of the events (its leaves, checkpoints and proofs,
// the legal holds and retention, and their operations) is package
// flagadmin/vlog, which imports this one and is built over the Service:
// its operations pass the Service's permission gate (Service.Authorize)
// and read with its visibility (Service.VisibleQuery). The events that
// holds and retention write are of this package's types.
//
// The package imports only the standard library. The leaf format of the
// verifiable log, which needs RFC 8785's canonical JSON, is adapters/tlog/leaf.
package flagadmin
