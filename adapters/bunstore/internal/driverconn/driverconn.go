// Package driverconn reaches a database driver's own connection under the
// wrappers a store's pools may put around it (bunstore.WithConnector),
// for the code that needs the driver's type: PostgreSQL's COPY and reads
// on the pgx connection, the connection SQLite's migrations lend.
package driverconn

import "database/sql/driver"

// Wrapper is a driver connection that wraps another, which Unwrap
// returns.
type Wrapper interface {
	Unwrap() driver.Conn
}

// As returns the first connection that is a T among dc (a driver
// connection, as sql.Conn.Raw gives it) and the connections it wraps, one
// under the other (Wrapper).
func As[T any](dc any) (T, bool) {
	for {
		if c, ok := dc.(T); ok {
			return c, true
		}
		w, ok := dc.(Wrapper)
		if !ok {
			var none T
			return none, false
		}
		dc = w.Unwrap()
	}
}
