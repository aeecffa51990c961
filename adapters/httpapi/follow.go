package httpapi

import (
	"net/http"

	"github.com/flagadmin/flagadmin/flagadmin/follow"
)

// FollowReporter reports on the follower of an Unleash database that keeps
// the served store, such as *unleashimport.Follower.
type FollowReporter interface {
	// Status returns the follower's state now.
	Status() follow.Status
}

// healthBody is the body of GET /health: Unleash's field, flagadmin's
// own, and the follow state when the server follows Unleash.
type healthBody struct {
	Health string         `json:"health"`
	Status string         `json:"status"`
	Follow *follow.Status `json:"follow,omitempty"`
	Log    *logHealth     `json:"log,omitempty"`
}

// LogSigner reports on the signing of the log's checkpoints, such as
// *tlog.Maintainer.
type LogSigner interface {
	// Refused returns why the server stopped signing, nil while it signs.
	Refused() error
}

// LogWitnesses, when the LogSigner implements it too, adds to /health
// the state of the witnesses the server submits its checkpoints to.
type LogWitnesses interface {
	// WitnessHealth returns the state of each witness.
	WitnessHealth() []WitnessHealth
}

// WitnessHealth is the state of one witness in /health.
type WitnessHealth struct {
	// Name is the witness's name, as its cosignatures give it.
	Name string `json:"name"`
	// URL is where the server submits its checkpoints.
	URL string `json:"url"`
	// CosignedSize is the size of the newest checkpoint the witness
	// cosigned for this server; -1 before the first.
	CosignedSize int64 `json:"cosignedSize"`
	// Problem is why the last submission failed; empty when it did not.
	Problem string `json:"problem,omitempty"`
}

// logHealth is the signing state of a server with a key: "signing", or
// "refused" with the problem found; and its witnesses, if any.
type logHealth struct {
	Signing   string          `json:"signing"`
	Problem   string          `json:"problem,omitempty"`
	Witnesses []WitnessHealth `json:"witnesses,omitempty"`
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
		if w, ok := s.logSigner.(LogWitnesses); ok {
			body.Log.Witnesses = w.WitnessHealth()
		}
	}
	writeJSON(w, http.StatusOK, body)
}

// answerNotLoaded answers 503 ServiceUnavailable, with Retry-After, on a
// server that follows Unleash while its store does not hold the copy yet,
// and reports whether it did. GET /ready and every /api/ request answer it:
// without the copy no token is known, and a 401 would tell a caller their
// token is wrong. The message says how far the import is or what keeps it
// from running. It reads the follower's status only, never the store,
// which the import may hold, so it answers at once; it is not logged as a
// failure of storage (the follower logs its state, the access log the
// answer).
func (s *Server) answerNotLoaded(w http.ResponseWriter) bool {
	if s.follow == nil {
		return false
	}
	why := s.follow.Status().NotLoaded()
	if why == "" {
		return false
	}
	e := newAPIError(http.StatusServiceUnavailable, nameServiceUnavailable, "The copy of the Unleash database is not loaded yet: "+why+".")
	w.Header().Set("Retry-After", retryAfterSeconds)
	writeJSON(w, e.status, e)
	return true
}
