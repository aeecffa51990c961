package bunstore

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

// The store's leases (flagadmin.Lease): the follow lease on the one row of
// follow_state, and each webhook sink's on its row of webhook_sinks, both
// in the columns holder and lease_until (Unix milliseconds of the callers'
// clocks). A lease is taken or renewed, released, and checked by a write
// it fences, each in one conditional UPDATE built here only, whose matched
// row count says whether it happened: the conditions below are
// flagadmin.Lease's rules in SQL. MySQL reports changed rows, not matched
// ones: every such UPDATE raises the row's seq, so a matched row is always
// a changed one.

// leaseRow is the row of a table that holds a lease.
type leaseRow struct {
	table string // follow_state, webhook_sinks
	where string // the condition that picks the row
	args  []any  // where's arguments
}

// followLease is the row of the follow lease.
var followLease = leaseRow{table: "follow_state", where: "id = 1"}

// sinkLease is the row of the lease of the sink name.
func sinkLease(name string) leaseRow {
	return leaseRow{table: "webhook_sinks", where: "name = ?", args: []any{name}}
}

// acquire gives holder the lease until until when it is free for holder at
// now (flagadmin.Lease.FreeFor: holder renews it, or no one holds it), and
// reports whether holder holds it.
func (l leaseRow) acquire(ctx context.Context, db bun.IDB, holder string, now, until time.Time) (bool, error) {
	return l.update(ctx, db, "holder = ?, lease_until = ?", []any{holder, until.UnixMilli()}, "",
		"(holder = ? OR holder = '' OR lease_until <= ?)", holder, now.UnixMilli())
}

// release ends holder's lease; nothing happens when holder does not hold it.
func (l leaseRow) release(ctx context.Context, db bun.IDB, holder string) error {
	_, err := l.update(ctx, db, "holder = '', lease_until = 0", nil, "", "holder = ?", holder)
	return err
}

// whileHeld sets set (with args) on the row when holder holds the lease at
// now (flagadmin.Lease.HeldBy), and reports whether it did: a write fenced
// by the lease. from, when not "", is the UPDATE's FROM clause.
func (l leaseRow) whileHeld(ctx context.Context, db bun.IDB, set string, args []any, from, holder string, now time.Time) (bool, error) {
	return l.update(ctx, db, set, args, from, "holder = ? AND lease_until > ?", holder, now.UnixMilli())
}

// whileNamed is whileHeld for a write that may outlast the lease while
// renewals wait for it (the load that starts following): the lease must
// still name holder, ended or not.
func (l leaseRow) whileNamed(ctx context.Context, db bun.IDB, set string, args []any, holder string) (bool, error) {
	return l.update(ctx, db, set, args, "", "holder = ?", holder)
}

// update runs UPDATE table SET set, seq = seq + 1 [from] WHERE where AND
// cond, and reports whether it matched the row.
func (l leaseRow) update(ctx context.Context, db bun.IDB, set string, setArgs []any, from, cond string, condArgs ...any) (bool, error) {
	if set != "" {
		set += ", "
	}
	query := "UPDATE " + l.table + " SET " + set + "seq = seq + 1" + from + " WHERE " + l.where + " AND " + cond
	res, err := db.ExecContext(ctx, query, slices.Concat(setArgs, l.args, condArgs)...)
	if err != nil {
		return false, err
	}
	return matched(res)
}

// matched reports whether an UPDATE of one row changed it.
func matched(res sql.Result) (bool, error) {
	n, err := res.RowsAffected()
	return n == 1, err
}
