package bunstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flagadmin/flagadmin/flagadmin"
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

// callbackError carries an error returned by a caller's function (or a test
// hook) out of a transaction, so that it is returned as it is.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }
func (e *callbackError) Unwrap() error { return e.err }

// fail turns an error of operation op into what the store returns: a
// caller's own error as it is, anything else mapped by classify, with the
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
	kind, _ := classify(err)
	return &storeError{op: op, kind: kind, cause: err}
}

// classify maps a driver or database/sql error to a domain kind: not found,
// conflict (duplicate key, broken reference), unavailable (cannot connect,
// timeout, overload, lock contention), or nil for anything else. retry
// reports a transient conflict between transactions (deadlock, serialization
// failure) after which running the transaction again may succeed.
func classify(err error) (kind error, retry bool) {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return flagadmin.ErrNotFound, false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return flagadmin.ErrUnavailable, false
	}

	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch code := pgErr.Code; {
		case code == "23505", code == "23503", code == "23P01":
			// unique_violation, foreign_key_violation, exclusion_violation
			return flagadmin.ErrConflict, false
		case code == "40001", code == "40P01":
			// serialization_failure, deadlock_detected
			return flagadmin.ErrUnavailable, true
		case strings.HasPrefix(code, "08"), // connection exception
			strings.HasPrefix(code, "53"),                                      // insufficient resources, too many connections
			strings.HasPrefix(code, "28"),                                      // invalid authorization
			code == "3D000",                                                    // database does not exist
			code == "25006",                                                    // read_only_sql_transaction (a standby, default_transaction_read_only)
			code == "55P03",                                                    // lock_not_available
			code == "57014",                                                    // query_canceled (statement_timeout)
			code == "57P01", code == "57P02", code == "57P03", code == "57P05": // shutdown, cannot connect now
			return flagadmin.ErrUnavailable, false
		}
		return nil, false
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		// SafeToRetry: failed before anything was sent, such as on a
		// connection found closed.
		return flagadmin.ErrUnavailable, false
	}

	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		switch myErr.Number {
		case 1062, 1022, 1586, // duplicate key
			1451, 1452, 1216, 1217: // foreign key
			return flagadmin.ErrConflict, false
		case 1213: // deadlock
			return flagadmin.ErrUnavailable, true
		case 1040, 1203, 1226, // too many connections, user resource limits
			1205,             // lock wait timeout
			1045, 1044, 1049, // access denied, unknown database
			1053, 1077, 1927, 2013, // server shutdown, connection killed or lost
			1317, 3024, 1969, // query interrupted, execution time exceeded
			1021, 1041, // disk full, out of memory
			1290, 1792: // running with --read-only, read-only transaction
			return flagadmin.ErrUnavailable, false
		}
		return nil, false
	}

	var sqliteErr interface{ Code() int }
	if errors.As(err, &sqliteErr) {
		switch sqliteErr.Code() & 0xff {
		case 19: // SQLITE_CONSTRAINT: primary key, unique, foreign key
			return flagadmin.ErrConflict, false
		case 5, 6, // SQLITE_BUSY, SQLITE_LOCKED
			7, 8, 9, 10, 13, 14: // NOMEM, READONLY, INTERRUPT, IOERR, FULL, CANTOPEN
			return flagadmin.ErrUnavailable, false
		}
		return nil, false
	}

	var netErr net.Error
	switch {
	case errors.As(err, &netErr),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn),
		errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE):
		return flagadmin.ErrUnavailable, false
	}
	return nil, false
}

// retryable reports whether running the transaction again may succeed.
func retryable(err error) bool {
	var cb *callbackError
	if errors.As(err, &cb) {
		return false
	}
	_, retry := classify(err)
	return retry
}
