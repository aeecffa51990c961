package sqlite

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
)

// The token index of the search texts, as on PostgreSQL: search_tokens,
// every token of every event's texts (stored.TokenSet, long ones too),
// which each insert of events adds theirs to (AddSearchTokens), with
// search_tokens_text, a contentless FTS5 table with the trigram tokenizer
// over the tokens (rowid = search_tokens.id), which finds the few tokens
// that contain a query's run; and events_tokens, a contentless FTS5 table
// over both texts (rowid = events.id) whose tokenizer splits them into
// those tokens, which finds the events that hold one
// (internal/textindex writes the query), with the event's project as a
// token of its own (project_token: stored.ProjectTokenSQL). It replaced events_text, a
// trigram index of the texts themselves, whose phrase queries read the
// position lists of every trigram of the query over nearly every event.
//
// events_tokens' tokenizer is FTS5's ascii one with every printable ASCII
// character but the delimiters (stored.SearchTokenDelimiters) and the
// letters and digits (which it keeps already) as tokenChars: it splits a
// text at the delimiters, and at the control characters, which no query
// holds (a query with one is scanned), so a token the vocabulary holds is
// found as a phrase of its pieces, in every event that holds it. Every
// byte of a multibyte character is a token character to it. It keeps
// the first 32 KiB of a token: a query found in a long token
// (stored.LongSearchToken) is checked in the texts.
//
// The store never changes a stored text, but a change made in the
// database (an UPDATE of events) adds the new texts whole to the
// vocabulary, whose tokens it may lack: a query's run lies in one token of
// such an entry, which events_tokens finds as a phrase of its tokens in
// the events that hold that token, so the changed event is found.
//
// The vocabulary keeps the tokens of events retention removed: they match
// no event. Both tables leave the events of the pending range
// (events_text_pending) to the backlog, which adds their tokens too.
const tokenChars = "!#$%&'()*+-./;<=>?@\\^_`|~"

// tokenIndexStatements make the token index, empty, and leave every
// stored event to the backlog (events_text_pending), which fills it in the
// background (searches scan the texts it has not reached); they drop
// events_text and its triggers. Every statement may run again.
var tokenIndexStatements = []string{
	"CREATE TABLE IF NOT EXISTS search_tokens (id INTEGER PRIMARY KEY, token TEXT NOT NULL UNIQUE)",
	"CREATE VIRTUAL TABLE IF NOT EXISTS search_tokens_text USING fts5(token, content='', tokenize='trigram case_sensitive 1')",
	`CREATE TRIGGER IF NOT EXISTS search_tokens_insert AFTER INSERT ON search_tokens BEGIN
	INSERT INTO search_tokens_text (rowid, token) VALUES (new.id, new.token);
END`,
	`CREATE VIRTUAL TABLE IF NOT EXISTS events_tokens USING fts5(search_payload, search_meta, content='',
	tokenize="ascii tokenchars '` + strings.ReplaceAll(tokenChars, "'", "''") + `'")`,
	"DROP TRIGGER IF EXISTS events_text_insert",
	"DROP TRIGGER IF EXISTS events_text_delete",
	"DROP TRIGGER IF EXISTS events_text_update",
	"DROP TABLE IF EXISTS events_text",
	// Every event is pending, those of a range pending before included.
	pendAll,
	`CREATE TRIGGER IF NOT EXISTS events_tokens_insert AFTER INSERT ON events BEGIN
	INSERT INTO events_tokens (rowid, search_payload, search_meta)
	SELECT new.id, new.search_payload, new.search_meta WHERE ` + notPending("new.id") + `;
END`,
	`CREATE TRIGGER IF NOT EXISTS events_tokens_delete AFTER DELETE ON events BEGIN
	INSERT INTO events_tokens (events_tokens, rowid, search_payload, search_meta)
	SELECT 'delete', old.id, old.search_payload, old.search_meta WHERE ` + notPending("old.id") + `;
END`,
	`CREATE TRIGGER IF NOT EXISTS events_tokens_update AFTER UPDATE OF id, search_payload, search_meta ON events BEGIN
	INSERT OR IGNORE INTO search_tokens (token) VALUES (new.search_payload), (new.search_meta);
	INSERT INTO events_tokens (events_tokens, rowid, search_payload, search_meta)
	SELECT 'delete', old.id, old.search_payload, old.search_meta WHERE ` + notPending("old.id") + `;
	INSERT INTO events_tokens (rowid, search_payload, search_meta)
	SELECT new.id, new.search_payload, new.search_meta WHERE ` + notPending("new.id") + `;
END`,
}

// textProjectStatements make events_tokens again with a third column,
// project_token (stored.ProjectTokenSQL), empty, and leave every stored
// event to the backlog, which fills it in the background (searches scan
// the texts it has not reached meanwhile); the triggers that keep it give the project
// too, and follow a change of an event's project (a changed text is added
// to the vocabulary whole, as before; an unchanged one holds its tokens
// already). Every statement may run again.
var textProjectStatements = []string{
	"DROP TRIGGER IF EXISTS events_tokens_insert",
	"DROP TRIGGER IF EXISTS events_tokens_delete",
	"DROP TRIGGER IF EXISTS events_tokens_update",
	"DROP TABLE IF EXISTS events_tokens",
	`CREATE VIRTUAL TABLE events_tokens USING fts5(search_payload, search_meta, project_token, content='',
	tokenize="ascii tokenchars '` + strings.ReplaceAll(tokenChars, "'", "''") + `'")`,
	pendAll,
	`CREATE TRIGGER events_tokens_delete AFTER DELETE ON events BEGIN
	INSERT INTO events_tokens (events_tokens, rowid, search_payload, search_meta, project_token)
	SELECT 'delete', old.id, old.search_payload, old.search_meta, ` + stored.ProjectTokenSQL("old.project") + ` WHERE ` + notPending("old.id") + `;
END`,
	`CREATE TRIGGER events_tokens_update AFTER UPDATE OF id, search_payload, search_meta, project ON events BEGIN
	INSERT OR IGNORE INTO search_tokens (token) SELECT new.search_payload WHERE new.search_payload IS NOT old.search_payload
	UNION ALL SELECT new.search_meta WHERE new.search_meta IS NOT old.search_meta;
	INSERT INTO events_tokens (events_tokens, rowid, search_payload, search_meta, project_token)
	SELECT 'delete', old.id, old.search_payload, old.search_meta, ` + stored.ProjectTokenSQL("old.project") + ` WHERE ` + notPending("old.id") + `;
	INSERT INTO events_tokens (rowid, search_payload, search_meta, project_token)
	SELECT new.id, new.search_payload, new.search_meta, ` + stored.ProjectTokenSQL("new.project") + ` WHERE ` + notPending("new.id") + `;
END`,
}

// TextProjects makes events_tokens again with each event's project
// (textProjectStatements), in the transaction of the migrations, which db
// is in: a failure leaves the schema as it was. The backlog fills it
// after the migration.
func (Dialect) TextProjects(ctx context.Context, db *bun.DB) error {
	for _, stmt := range textProjectStatements {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// TextTokens makes the token index of the search texts in place of
// events_text (tokenIndexStatements), in the transaction of the
// migrations, which db is in: a failure leaves the schema as it was. The
// backlog fills it after the migration.
func (Dialect) TextTokens(ctx context.Context, db *bun.DB) error {
	for _, stmt := range tokenIndexStatements {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// AddSearchTokens adds to search_tokens those of tokens it does not hold
// (the tokens of events inserted in db's transaction, or of a range the
// backlog indexes), in one statement: the tokens bound as one JSON array,
// which SQLite splits (json_each), since the driver binds each value of a
// statement in a time that grows with their number.
func (Dialect) AddSearchTokens(ctx context.Context, db bun.IDB, tokens []string) error {
	if len(tokens) == 0 {
		return nil
	}
	list, err := json.Marshal(tokens)
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "INSERT OR IGNORE INTO search_tokens (token) SELECT value FROM json_each(?)", string(list))
	return err
}
