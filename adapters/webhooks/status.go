package webhooks

import (
	"context"
	"errors"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// SinkStatus is a sink's stored delivery state with its lag: what
// `flagadmin webhooks status` shows.
type SinkStatus struct {
	flagadmin.SinkState
	// Registered: the database holds the sink's state (a server started
	// delivering for it). A configured sink no server has seen yet is not.
	Registered bool
	// Filtered: the lag counts the events of the sink's filter. Without
	// the sink's configuration it counts every event after the position.
	Filtered bool
	// LagEvents counts the events after the position; with LagAtLeast,
	// counting stopped there.
	LagEvents  int64
	LagAtLeast bool
	// OldestPending is the createdAt of the first event after the
	// position, zero when none.
	OldestPending time.Time
}

// errEnough ends a count of pending events.
var errEnough = errors.New("webhooks: counted enough")

// Status returns the state of every sink the database holds or sinks
// configures, by name as stored then configured ones not yet seen, each
// with its lag counted up to maxCount events (reading the event log from
// the sink's position on).
func Status(ctx context.Context, store Store, sinks []flagadmin.WebhookSink, maxCount int64) ([]SinkStatus, error) {
	states, err := store.SinkStates(ctx)
	if err != nil {
		return nil, err
	}
	configured := map[string]flagadmin.WebhookSink{}
	for _, s := range sinks {
		configured[s.Name] = s
	}
	var out []SinkStatus
	seen := map[string]bool{}
	for _, st := range states {
		seen[st.Name] = true
		q := flagadmin.EventQuery{}
		def, ok := configured[st.Name]
		if ok {
			if q, err = def.Query(); err != nil {
				return nil, err
			}
		}
		status := SinkStatus{SinkState: st, Registered: true, Filtered: ok}
		err := store.ExportEvents(ctx, q, st.Position, func(ev flagadmin.Event) error {
			if status.LagEvents == 0 {
				status.OldestPending = ev.CreatedAt
			}
			if status.LagEvents == maxCount {
				status.LagAtLeast = true
				return errEnough
			}
			status.LagEvents++
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			return nil, err
		}
		out = append(out, status)
	}
	for _, s := range sinks {
		if !seen[s.Name] {
			out = append(out, SinkStatus{SinkState: flagadmin.SinkState{Name: s.Name}, Filtered: true})
		}
	}
	return out, nil
}
