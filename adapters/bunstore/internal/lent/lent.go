// Package lent lends one driver connection, taken from a database/sql
// pool, to a pool of its own: code that needs a *sql.DB (the migrator)
// then runs on that one connection, which the store's SQLite migrations
// hold a write transaction on.
package lent

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/driverconn"
)

// Conn is what a driver connection must implement to be lent (modernc's
// and mattn's SQLite connections do).
type Conn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
}

// Pool returns a pool whose one connection is dc, a driver connection of
// another pool (from sql.Conn.Raw), or the first connection under it that
// is a Conn (driverconn.As), for as long as that one lends it. The
// connection stays its owner's: closing the pool leaves it open.
func Pool(dc any) (*sql.DB, error) {
	c, ok := driverconn.As[Conn](dc)
	if !ok {
		return nil, fmt.Errorf("driver connection %T cannot be lent", dc)
	}
	pool := sql.OpenDB(&connector{conn: c})
	pool.SetMaxOpenConns(1)
	pool.SetMaxIdleConns(1)
	return pool, nil
}

// connector hands out one existing driver connection, once.
type connector struct {
	conn Conn
	used bool
}

func (c *connector) Connect(context.Context) (driver.Conn, error) {
	if c.used {
		return nil, errors.New("lent connection already handed out")
	}
	c.used = true
	return lentConn{c.conn}, nil
}

func (c *connector) Driver() driver.Driver { return lentDriver{} }

type lentDriver struct{}

func (lentDriver) Open(string) (driver.Conn, error) {
	return nil, errors.New("a lent connection cannot be opened by name")
}

// lentConn forwards everything but Close.
type lentConn struct{ Conn }

func (lentConn) Close() error { return nil }
