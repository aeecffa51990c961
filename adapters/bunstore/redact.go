package bunstore

import (
	"net/url"
	"strings"
)

// RedactURL returns a database URL fit for messages and logs: its password
// replaced by xxxxx. A URL without "://" (sqlite:PATH, memory:) holds no
// password and comes back as it is; one that does not parse keeps only its
// scheme, as it may still hold a password.
func RedactURL(raw string) string {
	if !strings.Contains(raw, "://") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		scheme, _, _ := strings.Cut(raw, "://")
		return scheme + "://..."
	}
	return u.Redacted()
}
