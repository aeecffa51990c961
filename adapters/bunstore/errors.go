package bunstore

import (
	"errors"
	"log/slog"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/dberr"
)

// storeError is what the store returns for a failed database operation: a
// domain kind (or none, for an unexpected failure) and the driver error it
// came from. Its message names only the operation and the kind, so that it
// may reach a caller; the cause is for the log: reachable with errors.As,
// and shown by LogValue, which a transport logs once per failure with its
// request id (the store itself does not log failures).
type storeError struct {
	op    string
	kind  error
	cause error
	// detail adds the cause to the message: only for errors of Open and
	// Migrate, which go to the operator, never to an API caller.
	detail bool
}

func (e *storeError) Error() string {
	msg := "bunstore: " + e.op + ": storage failure"
	if e.kind != nil {
		msg = "bunstore: " + e.op + ": " + e.kind.Error()
	}
	if e.detail {
		msg += ": " + e.cause.Error()
	}
	return msg
}

// LogValue is what a log shows of the error: its message and the driver's
// explanation, which may quote SQL and must never reach an API caller.
func (e *storeError) LogValue() slog.Value {
	return slog.StringValue(e.op + ": " + e.cause.Error())
}

// withDetail returns err with its cause in the message, for the operator.
func withDetail(err error) error {
	var se *storeError
	if errors.As(err, &se) {
		d := *se
		d.detail = true
		return &d
	}
	return err
}

func (e *storeError) Unwrap() []error {
	if e.kind == nil {
		return []error{e.cause}
	}
	return []error{e.kind, e.cause}
}

// callbackError carries an error returned by a caller's function out of a
// transaction, so that it is returned as it is.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }
func (e *callbackError) Unwrap() error { return e.err }

// fail turns an error of operation op into what the store returns: a
// caller's own error as it is, anything else mapped by dberr.Classify (the
// one place driver errors become domain kinds), with the
// driver error as its cause. It logs nothing: the caller that answers the
// failure logs it once, with what it knows of the request (see LogValue).
func (s *Store) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	var cb *callbackError
	if errors.As(err, &cb) {
		return cb.err
	}
	var se *storeError
	if errors.As(err, &se) {
		return err
	}
	kind, _ := dberr.Classify(err)
	return &storeError{op: op, kind: kind, cause: err}
}

// retryable reports whether running the transaction again may succeed.
func retryable(err error) bool {
	var cb *callbackError
	if errors.As(err, &cb) {
		return false
	}
	_, retry := dberr.Classify(err)
	return retry
}
