package webhooks

import "time"

// RetryWaits returns the first n waits of the retry schedule of o (with
// its defaults applied), for tests.
func RetryWaits(o Options, n int) []time.Duration {
	o.defaults()
	e := &Engine{opts: o}
	r := e.newBackoff()
	waits := make([]time.Duration, n)
	for i := range waits {
		waits[i] = r.NextBackOff()
	}
	return waits
}
