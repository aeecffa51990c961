package faultsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"slices"
)

// connector makes the connections of inner, wrapped.
type connector struct {
	inner driver.Connector
	f     *Faults
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{inner: dc, f: c.f}, nil
}

// Driver returns inner's driver, whose connections (Open) are wrapped too.
func (c *connector) Driver() driver.Driver { return &wrappedDriver{inner: c.inner.Driver(), f: c.f} }

// Close closes inner, when it can be closed (database/sql closes a
// connector that is an io.Closer with its pool).
func (c *connector) Close() error {
	if cl, ok := c.inner.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// wrappedDriver opens the connections of inner, wrapped.
type wrappedDriver struct {
	inner driver.Driver
	f     *Faults
}

func (d *wrappedDriver) Open(name string) (driver.Conn, error) {
	dc, err := d.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &conn{inner: dc, f: d.f}, nil
}

// conn is a connection of the driver, wrapped. database/sql uses a
// connection from one goroutine at a time, so its state needs no lock.
type conn struct {
	inner driver.Conn
	f     *Faults
	// tx is the transaction running on the connection, nil for none.
	tx *tx
	// skipped is the statement the driver just declined to run without
	// preparing it (driver.ErrSkip), whose rules ran: database/sql
	// prepares it next and runs it, and the rules do not run again.
	skipped *skip
}

// skip is a statement whose rules ran, before the driver asked for it to
// be prepared, with the After functions still to run.
type skip struct {
	query string
	after []*rule
}

// The interfaces database/sql looks for on a connection: conn has them
// all, and does what database/sql does where the driver's connection
// lacks one.
var (
	_ driver.Conn               = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
)

// Unwrap returns the driver's own connection. What runs on it directly
// is not seen by the rules.
func (c *conn) Unwrap() driver.Conn { return c.inner }

func (c *conn) Close() error { return c.inner.Close() }

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	skipped := c.skipped
	c.skipped = nil
	sent := c.f.rewrite(query)
	var si driver.Stmt
	var err error
	if p, ok := c.inner.(driver.ConnPrepareContext); ok {
		si, err = p.PrepareContext(ctx, sent)
	} else if si, err = c.inner.Prepare(sent); err == nil && ctx.Err() != nil {
		si.Close()
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	s := &stmt{c: c, inner: si, query: query}
	if skipped != nil && skipped.query == query {
		s.ran = skipped
	}
	if _, ok := si.(driver.ColumnConverter); ok {
		return convertingStmt{s}, nil
	}
	return s, nil
}

// Begin begins a transaction without a context or options.
//
// Deprecated: as driver.Conn's; database/sql calls BeginTx.
func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var inner driver.Tx
	var err error
	if b, ok := c.inner.(driver.ConnBeginTx); ok {
		inner, err = b.BeginTx(ctx, opts)
	} else {
		inner, err = beginWithout(ctx, c.inner, opts)
	}
	if err != nil {
		return nil, err
	}
	c.tx = &tx{c: c, inner: inner, ctx: ctx}
	return c.tx, nil
}

// beginWithout begins a transaction on a connection without BeginTx, as
// database/sql does.
func beginWithout(ctx context.Context, dc driver.Conn, opts driver.TxOptions) (driver.Tx, error) {
	if opts.Isolation != 0 {
		return nil, errors.New("sql: driver does not support non-default isolation level")
	}
	if opts.ReadOnly {
		return nil, errors.New("sql: driver does not support read-only transactions")
	}
	t, err := dc.Begin()
	if err == nil && ctx.Err() != nil {
		t.Rollback()
		return nil, ctx.Err()
	}
	return t, err
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.skipped = nil
	if e, ok := c.inner.(driver.ExecerContext); ok {
		return pass(ctx, c, query, func(sent string) (driver.Result, error) { return e.ExecContext(ctx, sent, args) })
	}
	if e, ok := c.inner.(driver.Execer); ok {
		return pass(ctx, c, query, func(sent string) (driver.Result, error) {
			values, err := valuesOf(ctx, args)
			if err != nil {
				return nil, err
			}
			return e.Exec(sent, values)
		})
	}
	// database/sql prepares the statement instead.
	return nil, driver.ErrSkip
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.skipped = nil
	if q, ok := c.inner.(driver.QueryerContext); ok {
		return pass(ctx, c, query, func(sent string) (driver.Rows, error) { return q.QueryContext(ctx, sent, args) })
	}
	if q, ok := c.inner.(driver.Queryer); ok {
		return pass(ctx, c, query, func(sent string) (driver.Rows, error) {
			values, err := valuesOf(ctx, args)
			if err != nil {
				return nil, err
			}
			return q.Query(sent, values)
		})
	}
	// database/sql prepares the statement instead.
	return nil, driver.ErrSkip
}

// pass runs query, a statement on c, through the rules, and run with the
// text to send to the database.
func pass[R any](ctx context.Context, c *conn, query string, run func(sent string) (R, error)) (R, error) {
	var none R
	afterRules, err := c.f.statement(ctx, c.tx, query)
	if err != nil {
		return none, err
	}
	r, err := run(c.f.rewrite(query))
	if err == driver.ErrSkip { // compared as database/sql does
		c.skipped = &skip{query: query, after: afterRules}
		return none, err
	}
	return ranThen(ctx, afterRules, query, r, err)
}

// ranThen returns r and err, a statement's result, once the After
// functions of afterRules have run; in place of r, their error (closing
// r when it is rows).
func ranThen[R any](ctx context.Context, afterRules []*rule, query string, r R, err error) (R, error) {
	if err := after(ctx, afterRules, query, err); err != nil {
		if rows, ok := any(r).(driver.Rows); ok && rows != nil {
			rows.Close()
		}
		var none R
		return none, err
	}
	return r, nil
}

// valuesOf returns the values of args, for a driver that takes no names
// nor a context, as database/sql does: an error for a named argument, or
// when ctx has ended.
func valuesOf(ctx context.Context, args []driver.NamedValue) ([]driver.Value, error) {
	values := make([]driver.Value, len(args))
	for i, a := range args {
		if a.Name != "" {
			return nil, errors.New("sql: driver does not support the use of Named Parameters")
		}
		values[i] = a.Value
	}
	return values, ctx.Err()
}

// named returns values as ordinal arguments.
func named(values []driver.Value) []driver.NamedValue {
	args := make([]driver.NamedValue, len(values))
	for i, v := range values {
		args[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return args
}

// CheckNamedValue is the driver's, or driver.ErrSkip (database/sql's
// default conversion) for a driver without one.
func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if n, ok := c.inner.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (c *conn) Ping(ctx context.Context) error {
	if p, ok := c.inner.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *conn) ResetSession(ctx context.Context) error {
	c.skipped = nil
	if r, ok := c.inner.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *conn) IsValid() bool {
	if v, ok := c.inner.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// endTx records that t, if it is the connection's transaction, ended.
func (c *conn) endTx(t *tx) {
	if c.tx == t {
		c.tx = nil
	}
}

// stmt is a prepared statement of the driver, wrapped: its rules run each
// time it runs, but its rewrites when it was prepared.
type stmt struct {
	c     *conn
	inner driver.Stmt
	query string
	// ran: the rules of the statement's first run ran already
	// (conn.skipped).
	ran *skip
}

var (
	_ driver.Stmt              = (*stmt)(nil)
	_ driver.StmtExecContext   = (*stmt)(nil)
	_ driver.StmtQueryContext  = (*stmt)(nil)
	_ driver.NamedValueChecker = (*stmt)(nil)
	_ driver.ColumnConverter   = convertingStmt{}
)

func (s *stmt) Close() error  { return s.inner.Close() }
func (s *stmt) NumInput() int { return s.inner.NumInput() }

// Exec runs the statement without a context.
//
// Deprecated: as driver.Stmt's; database/sql calls ExecContext.
func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

// Query runs the statement without a context.
//
// Deprecated: as driver.Stmt's; database/sql calls QueryContext.
func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return passStmt(ctx, s, func() (driver.Result, error) {
		if e, ok := s.inner.(driver.StmtExecContext); ok {
			return e.ExecContext(ctx, args)
		}
		values, err := valuesOf(ctx, args)
		if err != nil {
			return nil, err
		}
		return s.inner.Exec(values)
	})
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return passStmt(ctx, s, func() (driver.Rows, error) {
		if q, ok := s.inner.(driver.StmtQueryContext); ok {
			return q.QueryContext(ctx, args)
		}
		values, err := valuesOf(ctx, args)
		if err != nil {
			return nil, err
		}
		return s.inner.Query(values)
	})
}

// passStmt runs s through the rules (unless they ran already), then run.
func passStmt[R any](ctx context.Context, s *stmt, run func() (R, error)) (R, error) {
	var afterRules []*rule
	if s.ran != nil {
		afterRules, s.ran = s.ran.after, nil
	} else {
		var err error
		if afterRules, err = s.c.f.statement(ctx, s.c.tx, s.query); err != nil {
			var none R
			return none, err
		}
	}
	r, err := run()
	return ranThen(ctx, afterRules, s.query, r, err)
}

// CheckNamedValue is the driver statement's, else its connection's: the
// order database/sql asks them in.
func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error {
	if n, ok := s.inner.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return s.c.CheckNamedValue(nv)
}

// convertingStmt is a stmt whose driver statement has column converters
// (driver.ColumnConverter), which database/sql uses after
// CheckNamedValue.
type convertingStmt struct{ *stmt }

func (s convertingStmt) ColumnConverter(idx int) driver.ValueConverter {
	return s.inner.(driver.ColumnConverter).ColumnConverter(idx)
}

// tx is a transaction of the driver, wrapped: its commit meets the rules
// AtCommit its statements matched.
type tx struct {
	c     *conn
	inner driver.Tx
	// ctx is the context the transaction began with.
	ctx context.Context
	// marks are the rules AtCommit its statements matched.
	marks []*rule
}

// mark records that a statement of t matched r.
func (t *tx) mark(r *rule) {
	if !slices.Contains(t.marks, r) {
		t.marks = append(t.marks, r)
	}
}

// marked reports whether a statement of t matched r.
func (t *tx) marked(r *rule) bool { return slices.Contains(t.marks, r) }

// Commit commits t, unless a rule AtCommit fails it: then t is rolled back
// and Commit returns the rule's error.
func (t *tx) Commit() error {
	t.c.endTx(t)
	if err := t.c.f.commit(t); err != nil {
		if rbErr := t.inner.Rollback(); rbErr != nil {
			return errors.Join(err, rbErr)
		}
		return err
	}
	return t.inner.Commit()
}

func (t *tx) Rollback() error {
	t.c.endTx(t)
	return t.inner.Rollback()
}
