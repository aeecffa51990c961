// Package upstream holds the error kinds of a server that stands in front
// of another (an Unleash it forwards what it does not answer itself to):
// the upstream could not be reached, answered badly, did not answer in
// time, or leads back to the forwarding server. The domain's Service never
// returns them; a gateway does, and the HTTP transport maps each to its
// status (502 or 504) in its one table of error kinds.
package upstream

import (
	"errors"
	"fmt"
)

// Error kinds, matched with errors.Is.
var (
	// ErrBadGateway: the upstream could not be reached or answered badly
	// (HTTP 502).
	ErrBadGateway = errors.New("bad gateway")
	// ErrTimeout: the upstream did not answer in time (HTTP 504).
	ErrTimeout = errors.New("gateway timeout")
	// ErrLoop: a request the gateway forwarded came back to that gateway,
	// so its upstream leads back to itself; of kind ErrBadGateway (HTTP
	// 502).
	ErrLoop = fmt.Errorf("%w: the upstream leads back to this server (a forwarding loop)", ErrBadGateway)
)
