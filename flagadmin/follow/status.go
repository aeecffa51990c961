package follow

import (
	"fmt"
	"time"
)

// Status describes a follower for people and probes: /health, metrics and
// "flagadmin follow status".
type Status struct {
	// Source is the followed database's URL without credentials.
	Source string `json:"source"`
	// State is one of the states below (Starting, Importing, ...).
	State string `json:"state"`
	// Reason explains a paused or stopped state in one line ("" otherwise).
	Reason string `json:"reason,omitempty"`
	// Ready: the store holds the copy (the import is done).
	Ready bool `json:"ready"`
	// Applying: this server holds the lease and applies.
	Applying bool `json:"applying"`
	// Holder is the lease holder's id, "" when none.
	Holder string `json:"holder,omitempty"`
	// Position is the last settled event id (State.Position).
	Position int64 `json:"position"`
	// Holes counts the ids up to Position never committed in the source.
	Holes int64 `json:"holes"`
	// LagEvents is how many event ids the source has committed past
	// Position that are not applied yet (holes among them included), as
	// of the last read; 0 when caught up.
	LagEvents int64 `json:"lagEvents"`
	// LagSeconds is how old the copy is: the time since it was last known
	// to equal the source (0 when it does as of the last read).
	LagSeconds float64 `json:"lagSeconds"`
	// WaitingFor is the event id delivery waits on: missing in the source
	// while a transaction that may still commit it is open (0 for none).
	WaitingFor int64 `json:"waitingFor,omitempty"`
	// Applied counts the events this server applied since it started.
	Applied int64 `json:"applied"`
	// Errors counts the failed reads and writes of this server's follower.
	Errors int64 `json:"errors"`
	// SyncedAt is State.SyncedAt (null before the first).
	SyncedAt *time.Time `json:"syncedAt"`
	// Copied and CopyTotal are, while the first import runs, the events
	// it has copied so far and the events it copies (0 otherwise).
	Copied    int64 `json:"copied,omitempty"`
	CopyTotal int64 `json:"copyTotal,omitempty"`
}

// NotLoaded says in one line why the store does not hold the copy yet:
// what the first import does, or what keeps it from running (the last
// error). It is "" once the copy is loaded (Ready).
func (s Status) NotLoaded() string {
	switch {
	case s.Ready:
		return ""
	case s.State == Importing && s.CopyTotal > 0 && s.Copied >= s.CopyTotal:
		return fmt.Sprintf("the import that starts following runs (all %d events copied; building the indexes and committing)", s.CopyTotal)
	case s.State == Importing && s.CopyTotal > 0:
		return fmt.Sprintf("the import that starts following runs (%d of %d events copied)", s.Copied, s.CopyTotal)
	case s.State == Importing:
		return "the import that starts following runs (reading users, projects, flags and tokens)"
	case s.State == Paused:
		return "the import that starts following cannot run: " + s.Reason + "; it is tried again by itself"
	case s.State == Stopped:
		return "following stopped: " + s.Reason
	case s.State == Standby:
		return "another server imports it"
	}
	return "following starts"
}

// The states of a Status (its State field).
const (
	// Starting: nothing read yet.
	Starting = "starting"
	// Importing: the store is empty and the import runs.
	Importing = "importing"
	// Following: this server applies the source's changes.
	Following = "following"
	// Standby: another server holds the lease and applies; this one
	// serves the copy.
	Standby = "standby"
	// Paused: the source (or the store) cannot be reached; serving goes
	// on from the copy and following resumes by itself.
	Paused = "paused"
	// Stopped: following stopped for good (the source lost what
	// flagadmin reads, or is another database); serving goes on.
	Stopped = "stopped"
)
