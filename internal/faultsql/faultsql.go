// Package faultsql puts faults between database/sql and a driver, for
// tests: a Faults wraps a driver.Connector, and every statement and every
// commit of the connections it makes passes through the rules a test adds
// and removes while they run. A rule selects statements by a regular
// expression and fails them, runs a function before or after them (which
// may block, holding the connection and its transaction's locks), rewrites
// their text, or acts at the commit of the transaction that ran them
// instead: failing it (the transaction is rolled back) or holding it.
//
// The wrapper keeps the optional interfaces of the driver's connections
// (driver.ExecerContext, driver.NamedValueChecker, ...): where the wrapped
// connection lacks one, the wrapper does what database/sql does without
// it, so a driver behaves as it does unwrapped. Each wrapped connection
// has an Unwrap method that returns the driver's own, for code that needs
// it (conn.Raw); what runs on that one is not seen by the rules.
package faultsql

import (
	"context"
	"database/sql/driver"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
)

// Rule is a fault: which statements it applies to and what it does to
// them. Every field but Match is optional.
type Rule struct {
	// Match selects statements: a regular expression their text, as the
	// caller wrote it (before any rewrite), matches. Databases quote
	// names differently ("events" on PostgreSQL and SQLite, `events` on
	// MySQL, or no quotes at all): a pattern such as ["`]?events["`]?
	// matches all three.
	Match string
	// Before runs before a matching statement, with its context and its
	// text. It may block; an error from it fails the statement, which
	// then does not run (a statement database/sql prepares first is
	// prepared, not run).
	Before func(ctx context.Context, query string) error
	// Err, when not nil, fails a matching statement: it does not run
	// (as with Before), and the caller gets Err.
	Err error
	// Rewrite returns the text to send to the database in place of a
	// matching statement's (for instance a no-op, "SELECT 1"). A prepared
	// statement is rewritten when it is prepared.
	Rewrite func(query string) string
	// After runs once a matching statement has run without error (for a
	// query, once the database has answered, before its rows are read),
	// with its context and its text. It may block; an error from it is
	// returned to the caller in place of the statement's result.
	After func(ctx context.Context, query string) error
	// AtCommit moves Before and Err from the statement to the commit of
	// the transaction that ran it, which the statement does not belong to
	// otherwise: Before runs before the transaction commits, with the
	// context the transaction began with and the query "COMMIT", and an
	// error from it or Err rolls the transaction back, so that nothing of
	// it is committed, and is returned by Commit. The statement itself
	// runs unchanged; a rule with AtCommit has no Rewrite or After.
	// Only transactions begun through database/sql (BeginTx) are seen,
	// not a BEGIN sent as a statement.
	AtCommit bool
}

// rule is an added Rule, its pattern compiled.
type rule struct {
	Rule
	re *regexp.Regexp
}

// Faults is a set of rules, applied to the connections of every connector
// it wraps (Wrap). Rules can be added and removed at any time, from any
// goroutine: a statement meets the rules present when it runs, a commit
// those present when it commits. The zero value has no rules.
type Faults struct {
	mu sync.Mutex
	// rules is the current list, in the order they were added; replaced
	// (never changed in place) under mu.
	rules atomic.Pointer[[]*rule]
}

// New returns a Faults without rules.
func New() *Faults { return &Faults{} }

// Add adds r, and returns the function that removes it (which may be
// called more than once). It panics when r.Match does not compile or r
// has AtCommit with Rewrite or After.
func (f *Faults) Add(r Rule) (remove func()) {
	if r.AtCommit && (r.Rewrite != nil || r.After != nil) {
		panic("faultsql: a rule AtCommit has no Rewrite or After")
	}
	added := &rule{Rule: r, re: regexp.MustCompile(r.Match)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules.Store(new(append(f.current(), added)))
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.rules.Store(new(slices.DeleteFunc(slices.Clone(f.current()), func(x *rule) bool { return x == added })))
	}
}

// current returns the rules present.
func (f *Faults) current() []*rule {
	if p := f.rules.Load(); p != nil {
		return *p
	}
	return nil
}

// Wrap returns a connector whose connections are c's, passed through f's
// rules.
func (f *Faults) Wrap(c driver.Connector) driver.Connector {
	return &connector{inner: c, f: f}
}

// statement applies the rules to query, a statement about to run in t
// (nil outside a transaction), except its rewrites (rewrite): it marks the
// rules AtCommit that query matches on t, runs the others' Before and
// fails it with their error or Err. It returns the After functions to run
// once the statement has run.
func (f *Faults) statement(ctx context.Context, t *tx, query string) ([]*rule, error) {
	var after []*rule
	for _, r := range f.current() {
		if !r.re.MatchString(query) {
			continue
		}
		if r.AtCommit {
			if t != nil {
				t.mark(r)
			}
			continue
		}
		if r.Before != nil {
			if err := r.Before(ctx, query); err != nil {
				return nil, err
			}
		}
		if r.Err != nil {
			return nil, r.Err
		}
		if r.After != nil {
			after = append(after, r)
		}
	}
	return after, nil
}

// rewrite returns the text to send in place of query: query passed
// through the Rewrite of every rule it matches, in the order they were
// added.
func (f *Faults) rewrite(query string) string {
	sent := query
	for _, r := range f.current() {
		if r.Rewrite != nil && r.re.MatchString(query) {
			sent = r.Rewrite(sent)
		}
	}
	return sent
}

// after runs the After functions of a statement that ran, unless it
// failed (err).
func after(ctx context.Context, rules []*rule, query string, err error) error {
	if err != nil {
		return err
	}
	for _, r := range rules {
		if err := r.After(ctx, query); err != nil {
			return err
		}
	}
	return nil
}

// Hold returns a function for a Rule's Before or After that holds the
// first statement (or commit) it runs for: it closes held, then waits
// until release is closed, or until the statement's context ends, whose
// error it returns. It lets every later one through at once.
func Hold(held chan<- struct{}, release <-chan struct{}) func(ctx context.Context, query string) error {
	var first atomic.Bool
	return func(ctx context.Context, _ string) error {
		if !first.CompareAndSwap(false, true) {
			return nil
		}
		close(held)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// commit applies the rules AtCommit that marked t (those still present)
// before it commits, and returns the first error: Before's, or Err.
func (f *Faults) commit(t *tx) error {
	for _, r := range f.current() {
		if !t.marked(r) {
			continue
		}
		if r.Before != nil {
			if err := r.Before(t.ctx, "COMMIT"); err != nil {
				return err
			}
		}
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}
