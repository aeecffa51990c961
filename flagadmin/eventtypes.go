package flagadmin

import "slices"

var knownEventTypes = func() map[string]struct{} {
	m := make(map[string]struct{}, len(eventTypes))
	for _, t := range eventTypes {
		m[t] = struct{}{}
	}
	return m
}()

// IsKnownEventType reports whether t is one of the event types Unleash's
// admin API lists or one of flagadmin's own (eventtypes_list.go). The
// comparison is case-sensitive.
func IsKnownEventType(t string) bool {
	_, ok := knownEventTypes[t]
	return ok
}

// EventTypes returns every known event type, in the order Unleash's admin
// API lists them, then flagadmin's own.
// The returned slice is a copy.
func EventTypes() []string {
	return slices.Clone(eventTypes)
}
