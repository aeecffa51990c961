// Package testclock is a clock for tests that moves only when the test
// moves it, so that what depends on time (leases, expiry, schedules)
// happens when the test says and not when a busy machine lets it.
package testclock

import (
	"sync"
	"time"
)

// Clock is a clock that stands still until Set or Advance; safe for
// concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock that reads t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
