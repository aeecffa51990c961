// Package worldgen generates a deterministic, realistic flagadmin world for
// benchmarks and load tests: users, groups, projects, features and tokens as
// a flagadmin.Batch, and an event history of any size as a stream, so
// millions of events never have to be held in memory at once.
//
// The same Config always gives the same world, byte for byte: every random
// choice comes from seeded PCG generators (math/rand/v2) and nothing depends
// on map order or the clock. The shape follows what a busy Unleash instance
// records: feature events dominate (strategy updates, environment toggles),
// a few projects and features are much busier than the rest (Zipf-like),
// activity grows over the two years, and some events share a millisecond.
//
// Probes describe searches whose exact result counts are known in advance
// (a selective feature, a medium project, a small and a large event type, an
// active user, a rare word planted in a small fraction of payloads, a month),
// so a benchmark can both time a search and check that the database holds
// the world it expects.
package worldgen

import (
	"errors"
	"fmt"
	"time"
)

// Version identifies the generator's algorithm. It is part of Fingerprint:
// change it whenever a change makes the same Config produce a different world.
const Version = 3

// Defaults of Config's zero fields.
const (
	DefaultEvents   = 1_000_000
	DefaultProjects = 200
	DefaultFeatures = 20_000
	DefaultUsers    = 500
	DefaultGroups   = 40
	DefaultSeed     = 20260601
)

// DefaultEnd is the end of the default two-year window.
var DefaultEnd = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// Config describes a world. Zero fields take the defaults: 1,000,000
// events, 200 projects, 20,000 features, 500 users, 40 groups, seed
// DefaultSeed, and the two years ending at DefaultEnd (or ending at End when
// only End is set).
type Config struct {
	// Events is the number of events in the history.
	Events int
	// Projects is the number of projects, "default" among them.
	Projects int
	// Features is the number of features; at least one per project.
	Features int
	// Users is the number of accounts (about a tenth are service accounts); at least 3.
	Users int
	// Groups is the number of user groups.
	Groups int
	// Seed selects one world among all the worlds of this shape.
	Seed uint64
	// Start and End bound the events' createdAt: Start <= createdAt < End.
	Start, End time.Time
}

// WithDefaults returns c with its zero fields set to the defaults, the
// feature count raised to the project count, and times in UTC milliseconds.
func (c Config) WithDefaults() Config {
	if c.Events == 0 {
		c.Events = DefaultEvents
	}
	if c.Projects == 0 {
		c.Projects = DefaultProjects
	}
	if c.Features == 0 {
		c.Features = DefaultFeatures
	}
	c.Features = max(c.Features, c.Projects)
	if c.Users == 0 {
		c.Users = DefaultUsers
	}
	if c.Groups == 0 {
		c.Groups = DefaultGroups
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	if c.End.IsZero() {
		c.End = DefaultEnd
	}
	if c.Start.IsZero() {
		c.Start = c.End.AddDate(-2, 0, 0)
	}
	c.Start, c.End = c.Start.UTC().Truncate(time.Millisecond), c.End.UTC().Truncate(time.Millisecond)
	return c
}

// Validate reports a configuration the generator cannot honour. It applies
// the defaults first.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if c.Events < 0 {
		errs = append(errs, fmt.Errorf("events must not be negative, got %d", c.Events))
	}
	if c.Projects < 1 {
		errs = append(errs, fmt.Errorf("projects must be at least 1, got %d", c.Projects))
	}
	if c.Users < 3 {
		errs = append(errs, fmt.Errorf("users must be at least 3, got %d", c.Users))
	}
	if c.Groups < 0 {
		errs = append(errs, fmt.Errorf("groups must not be negative, got %d", c.Groups))
	}
	if c.End.Sub(c.Start) < 30*24*time.Hour {
		errs = append(errs, fmt.Errorf("the window from %s to %s must span at least 30 days", c.Start.Format(time.DateOnly), c.End.Format(time.DateOnly)))
	}
	return errors.Join(errs...)
}

// Fingerprint names the world c describes, generator version included: two
// configs with the same fingerprint give identical worlds. A benchmark
// stores it beside a loaded database to know what the database holds.
func (c Config) Fingerprint() string {
	c = c.WithDefaults()
	return fmt.Sprintf("worldgen-v%d events=%d projects=%d features=%d users=%d groups=%d seed=%d window=%s/%s",
		Version, c.Events, c.Projects, c.Features, c.Users, c.Groups, c.Seed,
		c.Start.Format(time.RFC3339Nano), c.End.Format(time.RFC3339Nano))
}
