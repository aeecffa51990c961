// Package bunstore is the SQL flagadmin.Store, built on Bun for PostgreSQL,
// MySQL/MariaDB and SQLite with one implementation. It passes the same
// contract suite (internal/storetest) as the in-memory store.
//
// Open takes a URL: postgres://… (pgx), mysql://user:pass@host:port/db
// (go-sql-driver/mysql) or sqlite:PATH and sqlite::memory: (pure Go SQLite
// through sqliteshim). The schema is applied by embedded bun/migrate
// migrations when the store opens (unless WithoutMigrate) or by Migrate;
// replicas that start at once serialize on a lock that dies with its
// connection (PostgreSQL pg_advisory_lock, MySQL GET_LOCK, SQLite a write
// transaction), so a crash never leaves it held.
//
// # Storage layout
//
// Times are BIGINT Unix milliseconds in UTC, the precision the domain keeps,
// so they round-trip exactly on every database. Event data, preData and tags
// are JSON text (not JSONB: the bytes and key order come back as written).
// Each event row also keeps the two texts flagadmin.SearchTexts computes when
// it is written: search_payload (lower-cased JSON of data, preData and tags)
// and search_meta (lower-cased type and createdBy).
//
// # Event search
//
// Every filter of EventQuery is an indexed column: events has one composite
// index (column, created_at, id) per filter column and one on (created_at,
// id), so a page in the order created_at DESC, id DESC is read from an index
// without sorting. On PostgreSQL and SQLite the indexes of nullable columns
// leave out the rows where the column is null, which no filter matches.
//
// Exact totals are kept at write time, in the same transaction as the
// events, in event_counts (counts.go): rows for all events, events without
// a project, each value of each filter column, and each UTC day, every row
// split into shards that writers pick at random and readers add up. A
// search with no filter, one column filter, or a range of whole days (with
// any caller's visibility) reads its total from those rows (searchplan.go);
// any other search counts from an index. The page's ids are read from the
// index and only those rows fetched (a deferred join), so a large offset
// skips index entries, not table rows; an offset of 1,000 or more without a
// column filter first skips whole days by their counts. On PostgreSQL a
// page without free text is one statement (total, ids, rows). A free-text
// query reads its candidate rows once: the page's ids come with the count
// of all matches (COUNT(*) OVER ()).
//
// The free-text query is a literal substring of the precomputed lower-cased
// texts:
//
//   - PostgreSQL: LIKE '%…%' ESCAPE '!' with !, % and _ of the query
//     escaped, on search_payload (query-string search) or on search_payload
//     OR search_meta (deprecated search), each served by its own pg_trgm GIN
//     index (a bitmap scan whose candidates are rechecked by the LIKE). When
//     the pg_trgm extension cannot be created (the role may not), Migrate
//     logs it once and the store works without the indexes.
//   - MySQL/MariaDB: the same LIKE, on columns with a binary collation
//     (utf8mb4_0900_bin, utf8mb4_nopad_bin or utf8mb4_bin), so matching is
//     byte-exact: case-sensitive on the already lower-cased text and never
//     folding accents. There is no substring index; the query is a scan of
//     the rows the other filters leave.
//   - SQLite: a query of 3 or more characters is a phrase query on
//     events_text, a contentless FTS5 table with the trigram tokenizer over
//     both texts (full detail, kept current by triggers): the query's
//     trigrams at consecutive positions, in search_payload alone for the
//     query-string search, so exact without reading the texts. Shorter
//     queries, and the rare ones with characters the tokenizer alters
//     (ftsUsable), scan with instr(text, ?) > 0, an exact substring test
//     (LIKE in SQLite folds ASCII case).
//
// Both texts are computed in Go with strings.ToLower, the same function that
// lower-cases the query, and queries cannot contain control characters, so a
// match never spans the newline between two texts: the SQL test is exactly
// strings.Contains, the reference semantics of EventQuery.Matches.
//
// # Writes
//
// A state change and its event are one transaction. UpdateFeature and
// DeleteUser lock the row (SELECT … FOR UPDATE on PostgreSQL and MySQL;
// SQLite has one writer connection whose transactions begin IMMEDIATE), so
// concurrent calls run one after another. Deadlocks and serialization
// failures are retried a bounded number of times. SQLite uses one writer
// connection and, for a file, a separate pool of readers (WAL mode).
//
// Event ids are settled in commit order: on PostgreSQL and MySQL every
// transaction that appends events locks the one row of event_order right
// before it draws their ids and holds it to its commit, so a reader that
// follows the log with id > last (ExportEvents, the live stream's feed)
// never misses an id that commits later (eventorder.go). Writers of
// events commit one at a time for it; on PostgreSQL the INSERT takes the
// lock itself (a statement trigger), so it is held for the INSERT and the
// COMMIT only.
//
// Every write transaction adds 1 to one of the rows of store_versions,
// drawn at random, as its last statement or right before it draws event
// ids; their sum, read in one statement, is the change counter of
// flagadmin.VersionedStore (version.go).
//
// Driver errors are mapped to flagadmin.ErrNotFound, ErrConflict and
// ErrUnavailable in one function (errors.go); the error text never contains
// driver messages or SQL.
package bunstore
