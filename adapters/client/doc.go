// Package client is a typed Go client of the flagadmin admin API
// (/api/admin), which also speaks to a real Unleash server.
//
// A Client performs the five operations of the API with the domain's types
// and implements flagadmin.Admin, the interface a Service bound to a
// principal (flagadmin.Service.As) implements in process: a program written
// against flagadmin.Admin switches between embedded and remote by changing
// the line that builds it.
//
//	c, err := client.New("https://flags.example.com", token)
//	...
//	var admin flagadmin.Admin = c // or svc.As(principal)
//	projects, err := admin.ListProjects(ctx, flagadmin.ProjectListOptions{})
//
// Errors come back as the domain's kinds: errors.Is(err,
// flagadmin.ErrNotFound), flagadmin.ErrNoAccess, ErrAuthenticationRequired,
// ErrConflict, ErrUnavailable, or a *flagadmin.ValidationError with the
// server's details as its fields. Every error the server answered is a
// *Error, which carries the status, the server's error id, name and message
// and unwraps to the kind.
//
// Events walks every matching event by following the server's Link
// rel="next" (keyset paging) or, against a server that sends none such as
// Unleash, by offset. ExportEvents and Export read the streamed export
// (GET /api/admin/events/export); a transfer the server cut off is an error,
// never a clean end.
//
// Idempotent requests (GET, DELETE, and the deprecated search, a read sent
// as POST) are retried on 503 and 429, honouring Retry-After, and on
// connection errors, within the bounds of a RetryPolicy. The lifecycle
// completion, a write, is retried only when the connection could not be
// opened, so the request certainly never reached the server.
//
// The verifiable log: LogCheckpoint, LogInclusionProof,
// LogConsistencyProof and LogLeaves read it; VerifyEvent checks that an
// event the caller holds is in the log a signed checkpoint commits to, and
// VerifyConsistency that the log only grew between two checkpoints, with
// the Merkle library's verifiers:
//
//	v, err := note.NewVerifier(verifierKey) // the .pub file of flagadmin log keygen
//	...
//	cp, err := c.VerifyEvent(ctx, ev, nil, v) // nil: the server's newest checkpoint
//
// The package imports the domain (flagadmin), the standard library, and
// for the log golang.org/x/mod/sumdb/note, github.com/transparency-dev/merkle
// and github.com/transparency-dev/formats.
package client
