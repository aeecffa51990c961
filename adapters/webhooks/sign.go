package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The headers of a webhook request; receivers deduplicate by HeaderEventID.
const (
	HeaderEventID   = "X-Flagadmin-Event-Id"
	HeaderEventType = "X-Flagadmin-Event-Type"
	HeaderTimestamp = "X-Flagadmin-Timestamp"
	HeaderSignature = "X-Flagadmin-Signature"
)

// Sign returns the X-Flagadmin-Signature of a request: "sha256=" and the
// hex HMAC-SHA256, keyed with the sink's secret, of the decimal Unix
// timestamp, a ".", and the body.
func Sign(secret string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(strconv.AppendInt(nil, timestamp, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Errors of Verify.
var (
	// ErrBadSignature: the signature is missing, malformed, or not the
	// body's and timestamp's under the secret.
	ErrBadSignature = errors.New("webhooks: bad signature")
	// ErrStaleTimestamp: the timestamp is missing, malformed, or further
	// from now than the tolerance (a replayed or delayed request).
	ErrStaleTimestamp = errors.New("webhooks: stale or missing timestamp")
)

// Verify checks a received request's X-Flagadmin-Timestamp and
// X-Flagadmin-Signature values against its body and the secret: the
// signature compared in constant time, and the timestamp within tolerance
// of now either way. Receivers written in Go can use it as it is;
// examples/webhook-receiver shows the same check with the standard library
// only.
func Verify(secret, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrStaleTimestamp
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return ErrStaleTimestamp
	}
	hexSum, ok := strings.CutPrefix(signature, "sha256=")
	if !ok {
		return ErrBadSignature
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return ErrBadSignature
	}
	want, _ := hex.DecodeString(strings.TrimPrefix(Sign(secret, ts, body), "sha256="))
	if !hmac.Equal(got, want) {
		return ErrBadSignature
	}
	return nil
}
