package dberr

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// sqliteError is shaped like the SQLite driver's error (a Code method).
type sqliteError int

func (e sqliteError) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e sqliteError) Code() int     { return int(e) }

func TestClassify(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		kind  error
		retry bool
	}{
		{"no rows", sql.ErrNoRows, flagadmin.ErrNotFound, false},
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), flagadmin.ErrUnavailable, false},
		{"canceled", context.Canceled, flagadmin.ErrUnavailable, false},
		{"pg unique", &pgconn.PgError{Code: "23505"}, flagadmin.ErrConflict, false},
		{"pg foreign key", &pgconn.PgError{Code: "23503"}, flagadmin.ErrConflict, false},
		{"pg serialization", &pgconn.PgError{Code: "40001"}, flagadmin.ErrUnavailable, true},
		{"pg deadlock", &pgconn.PgError{Code: "40P01"}, flagadmin.ErrUnavailable, true},
		{"pg too many connections", &pgconn.PgError{Code: "53300"}, flagadmin.ErrUnavailable, false},
		{"pg connection failure", &pgconn.PgError{Code: "08006"}, flagadmin.ErrUnavailable, false},
		{"pg statement timeout", &pgconn.PgError{Code: "57014"}, flagadmin.ErrUnavailable, false},
		{"pg idle in transaction timeout", &pgconn.PgError{Code: "25P03", Severity: "FATAL"}, flagadmin.ErrUnavailable, false},
		{"pg shutting down", &pgconn.PgError{Code: "57P01"}, flagadmin.ErrUnavailable, false},
		{"pg syntax error", &pgconn.PgError{Code: "42601"}, nil, false},
		{"mysql duplicate", &mysql.MySQLError{Number: 1062}, flagadmin.ErrConflict, false},
		{"mysql foreign key", &mysql.MySQLError{Number: 1452}, flagadmin.ErrConflict, false},
		{"mysql parent row", &mysql.MySQLError{Number: 1451}, flagadmin.ErrConflict, false},
		{"mysql deadlock", &mysql.MySQLError{Number: 1213}, flagadmin.ErrUnavailable, true},
		{"mysql too many connections", &mysql.MySQLError{Number: 1040}, flagadmin.ErrUnavailable, false},
		{"mysql lock wait timeout", &mysql.MySQLError{Number: 1205}, flagadmin.ErrUnavailable, false},
		{"mysql syntax error", &mysql.MySQLError{Number: 1064}, nil, false},
		{"mysql invalid connection", mysql.ErrInvalidConn, flagadmin.ErrUnavailable, false},
		{"sqlite primary key", sqliteError(1555), flagadmin.ErrConflict, false},
		{"sqlite foreign key", sqliteError(787), flagadmin.ErrConflict, false},
		{"sqlite busy", sqliteError(5), flagadmin.ErrUnavailable, false},
		{"sqlite busy snapshot", sqliteError(517), flagadmin.ErrUnavailable, false},
		{"sqlite locked", sqliteError(6), flagadmin.ErrUnavailable, false},
		{"sqlite cannot open", sqliteError(14), flagadmin.ErrUnavailable, false},
		{"sqlite syntax error", sqliteError(1), nil, false},
		{"pg read-only transaction", &pgconn.PgError{Code: "25006"}, flagadmin.ErrUnavailable, false},
		{"pg disk full", &pgconn.PgError{Code: "53100"}, flagadmin.ErrUnavailable, false},
		{"mysql read-only server", &mysql.MySQLError{Number: 1290}, flagadmin.ErrUnavailable, false},
		{"mysql disk full", &mysql.MySQLError{Number: 1021}, flagadmin.ErrUnavailable, false},
		{"sqlite read-only", sqliteError(8), flagadmin.ErrUnavailable, false},
		{"sqlite read-only database moved", sqliteError(1032), flagadmin.ErrUnavailable, false},
		{"sqlite disk full", sqliteError(13), flagadmin.ErrUnavailable, false},
		{"connection refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, flagadmin.ErrUnavailable, false},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), flagadmin.ErrUnavailable, false},
		{"unexpected EOF", io.ErrUnexpectedEOF, flagadmin.ErrUnavailable, false},
		{"pgconn connect error", &pgconn.ConnectError{}, flagadmin.ErrUnavailable, false},
		{"unknown", errors.New("something else"), nil, false},
	}
	for _, c := range cases {
		kind, retry := Classify(c.err)
		if kind != c.kind || retry != c.retry {
			t.Errorf("%s: got (%v, %v), want (%v, %v)", c.name, kind, retry, c.kind, c.retry)
		}
	}
}
