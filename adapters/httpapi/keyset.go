package httpapi

import (
	"net/url"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// Keyset paging of the search (flagadmin/cursor.go): a page that is not the last
// carries Link: <URL>; rel="next", URL being the request's path and query
// with offset removed and after set to the page's cursor, every other
// parameter kept as the client wrote it (unknown ones too).

// Resolve keeps the request's path and raw query for the next link.
func (in *searchEventsInput) Resolve(ctx huma.Context) []error {
	u := ctx.URL()
	in.path, in.rawQuery = u.EscapedPath(), u.RawQuery
	return nil
}

// nextLink returns the Link header value of the page after the one the
// request at path?rawQuery answered, whose cursor is next.
func nextLink(path, rawQuery, next string) string {
	var b strings.Builder
	b.WriteByte('<')
	writeLinkSafe(&b, path)
	b.WriteByte('?')
	for pair := range strings.SplitSeq(rawQuery, "&") {
		if pair == "" {
			continue
		}
		name, _, _ := strings.Cut(pair, "=")
		if key, err := url.QueryUnescape(name); err == nil && (key == "offset" || key == "after") {
			continue
		}
		writeLinkSafe(&b, pair)
		b.WriteByte('&')
	}
	b.WriteString("after=")
	b.WriteString(next) // base64url: safe as it is
	b.WriteString(`>; rel="next"`)
	return b.String()
}

// writeLinkSafe writes s, percent-encoding the bytes that may not appear in
// a URI reference between < and > (RFC 3986 and 8288): controls, space,
// non-ASCII and " < > \ ^ ` { | }. Everything else, escapes included, is
// kept as the client wrote it.
func writeLinkSafe(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
}
