// Package dberr maps the errors of the store's drivers (pgx, go-sql-driver
// mysql, modernc SQLite or mattn's, database/sql, the network) to the domain's kinds,
// in one place.
package dberr

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// verdict is what an error means: a kind, and whether running the
// transaction again may succeed.
type verdict struct {
	kind  error
	retry bool
}

var (
	conflict    = verdict{kind: flagadmin.ErrConflict}
	unavailable = verdict{kind: flagadmin.ErrUnavailable}
	transient   = verdict{kind: flagadmin.ErrUnavailable, retry: true}
)

// pgCodes are the PostgreSQL error codes with a kind; pgClasses likewise
// for every code of a class (the first two characters).
var (
	pgCodes = map[string]verdict{
		"23505": conflict, "23503": conflict, "23P01": conflict, // unique, foreign key, exclusion violation
		"40001": transient, "40P01": transient, // serialization failure, deadlock
		"3D000": unavailable,                                                                   // database does not exist
		"25006": unavailable,                                                                   // read_only_sql_transaction (a standby, default_transaction_read_only)
		"55P03": unavailable,                                                                   // lock_not_available
		"57014": unavailable,                                                                   // query_canceled (statement_timeout)
		"25P03": unavailable,                                                                   // idle_in_transaction_session_timeout: the server ended a transaction that waited too long between statements
		"57P01": unavailable, "57P02": unavailable, "57P03": unavailable, "57P05": unavailable, // shutdown, cannot connect now
	}
	pgClasses = map[string]verdict{
		"08": unavailable, // connection exception
		"53": unavailable, // insufficient resources, too many connections
		"28": unavailable, // invalid authorization
	}
)

// mysqlNumbers are the MySQL and MariaDB error numbers with a kind.
var mysqlNumbers = map[uint16]verdict{
	1062: conflict, 1022: conflict, 1586: conflict, // duplicate key
	1451: conflict, 1452: conflict, 1216: conflict, 1217: conflict, // foreign key
	1213: transient,                                         // deadlock
	1040: unavailable, 1203: unavailable, 1226: unavailable, // too many connections, user resource limits
	1205: unavailable,                                       // lock wait timeout
	1045: unavailable, 1044: unavailable, 1049: unavailable, // access denied, unknown database
	1053: unavailable, 1077: unavailable, 1927: unavailable, 2013: unavailable, // server shutdown, connection killed or lost
	1317: unavailable, 3024: unavailable, 1969: unavailable, // query interrupted, execution time exceeded
	1021: unavailable, 1041: unavailable, // disk full, out of memory
	1290: unavailable, 1792: unavailable, // running with --read-only, read-only transaction
}

// sqliteCodes are the SQLite primary result codes with a kind.
var sqliteCodes = map[int]verdict{
	19: conflict,                    // SQLITE_CONSTRAINT: primary key, unique, foreign key
	5:  unavailable, 6: unavailable, // SQLITE_BUSY, SQLITE_LOCKED
	7: unavailable, 8: unavailable, 9: unavailable, 10: unavailable, 13: unavailable, 14: unavailable, // NOMEM, READONLY, INTERRUPT, IOERR, FULL, CANTOPEN
}

// Classify maps a driver or database/sql error to a domain kind: not found,
// conflict (duplicate key, broken reference), unavailable (cannot connect,
// timeout, overload, lock contention), or nil for anything else. retry
// reports a transient conflict between transactions (deadlock,
// serialization failure) after which running the transaction again may
// succeed.
func Classify(err error) (kind error, retry bool) {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return flagadmin.ErrNotFound, false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return flagadmin.ErrUnavailable, false
	}
	if v, ok := driverVerdict(err); ok {
		return v.kind, v.retry
	}
	if lostConnection(err) {
		return flagadmin.ErrUnavailable, false
	}
	return nil, false
}

// driverVerdict is what a database's own error means; ok is false when
// err is none.
func driverVerdict(err error) (verdict, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if v, ok := pgCodes[pgErr.Code]; ok {
			return v, true
		}
		return pgClasses[pgErr.Code[:min(2, len(pgErr.Code))]], true
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return mysqlNumbers[myErr.Number], true
	}
	var sqliteErr interface{ Code() int }
	if errors.As(err, &sqliteErr) {
		return sqliteCodes[sqliteErr.Code()&0xff], true
	}
	if code, ok := nativeSQLiteCode(err); ok {
		return sqliteCodes[code], true
	}
	return verdict{}, false
}

// lostConnection reports whether err is a connection that could not be
// made or was lost.
func lostConnection(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), pgconn.Timeout(err),
		pgconn.SafeToRetry(err): // failed before anything was sent, such as on a connection found closed
		return true
	case errors.As(err, &netErr),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn),
		errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}
