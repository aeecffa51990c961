package httpapi

import (
	"net/http"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// FollowReporter reports on the follower of an Unleash database that keeps
// the served store (decisions §17), such as *unleashimport.Follower.
type FollowReporter interface {
	// Status returns the follower's state now.
	Status() flagadmin.FollowStatus
}

// msgNotImported is the message of /ready while a following server's
// store does not hold the copy yet.
const msgNotImported = "The copy of the Unleash database is not loaded yet: the import that starts following runs."

// healthBody is the body of GET /health: Unleash's field, flagadmin's
// own, and the follow state when the server follows Unleash.
type healthBody struct {
	Health string                  `json:"health"`
	Status string                  `json:"status"`
	Follow *flagadmin.FollowStatus `json:"follow,omitempty"`
	Log    *logHealth              `json:"log,omitempty"`
}

// LogSigner reports on the signing of the log's checkpoints, such as
// *tlog.Maintainer.
type LogSigner interface {
	// Refused returns why the server stopped signing, nil while it signs.
	Refused() error
}

// logHealth is the signing state of a server with a key: "signing", or
// "refused" with the problem found.
type logHealth struct {
	Signing string `json:"signing"`
	Problem string `json:"problem,omitempty"`
}

// health answers 200 while the process is up, with Unleash's body field
// ("health":"GOOD", what its /health answers) beside flagadmin's own, so
// probes written for an Unleash deployment keep working; a server that
// follows Unleash adds its follow state (state, position, lag...), and a
// server that signs the log's checkpoints whether it still does.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	body := healthBody{Health: "GOOD", Status: "ok"}
	if s.follow != nil {
		st := s.follow.Status()
		body.Follow = &st
	}
	if s.logSigner != nil {
		body.Log = &logHealth{Signing: "signing"}
		if err := s.logSigner.Refused(); err != nil {
			body.Log.Signing, body.Log.Problem = "refused", err.Error()
		}
	}
	writeJSON(w, http.StatusOK, body)
}

// notImported reports whether the server follows Unleash and its store
// does not hold the copy yet (GET /ready then answers 503).
func (s *Server) notImported() bool {
	return s.follow != nil && !s.follow.Status().Ready
}
