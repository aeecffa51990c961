package bunstore

import (
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// textFilter keeps the events whose search texts contain text, a literal
// (see the package documentation).
func (s *Store) textFilter(sel *bun.SelectQuery, text string, scope flagadmin.TextScope) *bun.SelectQuery {
	switch s.dialect {
	case dialect.PG:
		// The trigram index covers both texts joined (searchTextSQL); the
		// payload scope rechecks the payload alone.
		pattern := "%" + likeEscaper.Replace(text) + "%"
		sel = sel.Where(searchTextSQL+" LIKE ? ESCAPE '!'", pattern)
		if scope == flagadmin.TextPayload {
			sel = sel.Where("search_payload LIKE ? ESCAPE '!'", pattern)
		}
		return sel
	case dialect.MySQL:
		pattern := "%" + likeEscaper.Replace(text) + "%"
		if scope == flagadmin.TextPayload {
			return sel.Where("search_payload LIKE ? ESCAPE '!'", pattern)
		}
		return sel.Where("(search_payload LIKE ? ESCAPE '!' OR search_meta LIKE ? ESCAPE '!')", pattern, pattern)
	default:
		// SQLite's LIKE folds ASCII case; instr is an exact substring test.
		if scope == flagadmin.TextPayload {
			if utf8.RuneCountInString(text) >= 3 {
				// The FTS5 trigram index (sqliteFTS) finds the candidates:
				// GLOB on a case-sensitive trigram table is a substring test
				// the index serves when the text has at least 3 characters.
				sel = sel.Where("id IN (SELECT rowid FROM events_fts WHERE search_payload GLOB ?)", "*"+globEscaper.Replace(text)+"*")
			}
			return sel.Where("instr(search_payload, ?) > 0", text)
		}
		return sel.Where("(instr(search_payload, ?) > 0 OR instr(search_meta, ?) > 0)", text, text)
	}
}

// globEscaper makes a text a literal GLOB pattern: each of * ? [ becomes
// a bracket expression matching just that character.
var globEscaper = strings.NewReplacer("*", "[*]", "?", "[?]", "[", "[[]")

// likeEscaper makes a text a literal LIKE pattern with ESCAPE '!'.
var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
