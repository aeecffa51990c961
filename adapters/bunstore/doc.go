// Package bunstore is the SQL flagadmin.Store, built on Bun for PostgreSQL,
// MySQL/MariaDB and SQLite with one implementation. It passes the same
// contract suite (internal/storetest) as the in-memory store, with its
// speed-ups on and off.
//
// Open takes a URL: postgres://… (pgx), mysql://user:pass@host:port/db
// (go-sql-driver/mysql) or sqlite:PATH and sqlite::memory: (SQLite through
// sqliteshim: modernc.org/sqlite, pure Go, or, in a build with the tags
// cgosqlite, sqlite_fts5 and sqlite_stat4, mattn/go-sqlite3 with cgo).
//
// # The code
//
// The files of this package are the store itself, read top to bottom:
// open.go (connections, options, the choice of dialect and summaries),
// errors.go (what a failure returns), tx.go (transactions, retries),
// migrate.go and migrations.go (the schema), the resources (users.go,
// accounts.go, projects.go, features.go, write.go, webhooks.go,
// version.go), record.go (the end of every write transaction: the
// summaries, the version, the events), leaves.go, log.go and prune.go (the
// verifiable log and retention), insert.go and load.go (the bulk paths),
// search.go and export.go (the portable event search, keyset pages, the
// export).
//
// The core owns two interfaces, each answered by packages under internal/
// that never import it, and each chosen once, by Open:
//
//   - its dialect (dialect.go), what differs between the databases: a
//     package per database under internal/dialects (postgres, mysql,
//     sqlite), picked by the URL's scheme. The core never asks which
//     database it runs on (dialectboundary_test.go).
//   - its summaries (summaries.go), the speed-ups. The core calls them at
//     named points: Record, with a write transaction's changes (record);
//     PlanSearch and MatchText, for a search's total, the start of a page
//     at a large offset and its free text (search.go); ReadPage and
//     ReadExport, for a page or an export's batch in one statement
//     (search.go, export.go); ProjectFigures and NewestEvents, the SQL
//     of what the project list's statement reads (projects.go);
//     ReadProof, for a proof (log.go); Rebuild (Migrate with
//     WithRebuild). Each has a plain answer, "not served", on which the
//     core answers from the base tables; plain, the summaries of
//     WithoutTuning(), gives it everywhere. internal/tuned puts the
//     speed-up packages together behind the interface; no other core file
//     than open.go imports it, and none imports a speed-up
//     (summaryboundary_test.go).
//
// The speed-ups, each a package under internal/ that WithoutTuning turns
// off, leaving the plain path it speeds up (the contract suite runs both):
//
//   - eventcounts keeps event_counts, and reads the totals of common
//     searches from it, and the start of pages at large offsets;
//   - projectfigures keeps project_stats, the project list's figures;
//   - pgpage answers a page on PostgreSQL in one statement, prepared when
//     its plan allows, and decodes rows from pgx's raw values;
//   - textindex answers free text on SQLite from its FTS5 index;
//   - proofread reads what a proof needs in one statement.
//
// More packages serve them all: summary (what the core and the summaries
// share: the changes of a write, a search's plan, a page, the figures and
// the statements that compute them from the base tables), sqlq (SQL
// fragments with ? placeholders, which Bun writes as literals and pgpage
// numbers $1, $2, ...), stored (the forms values take in the tables, and
// the row of an event), dberr (driver errors as domain kinds), indexbuild
// (the steps of rebuilding indexes after a load), lent (a connection lent
// to a pool of its own, for the SQLite migrations), driverconn (the
// driver's own connection under the wrappers of WithConnector) and
// sqlitefile (what keeps SQLite from opening a file).
//
// Which summaries a store keeps is chosen at Open and not recorded in the
// database: a database must be served by stores with one set of them
// (WithoutTuning says what goes wrong otherwise, and how to switch).
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
// # Schema
//
// The schema is written once per database, in schema/postgres.sql,
// schema/mysql.sql and schema/sqlite.sql: the baseline migration. Migrate
// applies what a database lacks (at Open, unless WithoutMigrate). A later
// migration is added only for a change that must carry existing data, and
// is never edited (migrations.go). Replicas that start at once serialize
// on a lock that dies with its connection (PostgreSQL pg_advisory_lock,
// MySQL GET_LOCK, SQLite a write transaction), so a crash never leaves it
// held. A database that has migrations this version does not know is
// refused: made by a newer version (ErrNewerSchema), or by a development
// version before the baseline (ErrDevelopmentSchema); Schema reports them.
//
// # Event search
//
// Every filter of EventQuery is an indexed column: events has one composite
// index (column, created_at, id) per filter column and one on (created_at,
// id, project), so a page in the order created_at DESC, id DESC is read
// from an index without sorting, and a caller who cannot see some projects
// filters them in the index. On PostgreSQL and SQLite the indexes of
// nullable columns leave out the rows where the column is null, which no
// filter matches. The page's ids are read from the index and only those
// rows fetched (a deferred join). A page by cursor (keyset paging)
// is a range of the same index, as cheap at any depth.
//
// With event_counts, a search with no filter, one column filter, or a
// range of whole days (with any caller's visibility) reads its exact total
// from a few counted rows; any other search counts from an index. An
// offset of 1,000 or more without a column filter skips whole months, then
// whole days, by their counts, instead of reading past the offset in the
// index. On PostgreSQL, with pgpage, a page without free text and without
// such a skip is one statement (total, ids, rows), and a skip and its
// page run outside a transaction, answered only when the change counter
// read by the first statement and the last shows that no write committed
// in between (else they run again in a transaction); elsewhere the total
// and the page are read in one read-only transaction (one snapshot).
//
// The free-text query is a literal substring of the precomputed lower-cased
// texts, one pass reading the page's ids with the count of all matches
// (COUNT(*) OVER ()):
//
//   - PostgreSQL: a query with a run of 3 or more characters without a
//     delimiter (a JSON structural character, a double quote or white
//     space) is read from the token index (internal/textindex): the
//     tokens that contain its longest run, found in search_tokens by its
//     pg_trgm index (by three of the run's trigrams, each token found
//     checked by strpos), then the events that hold one, by a GIN index of
//     each text's tokens, each candidate checked for the whole query by
//     strpos. A query whose runs are all shorter is read by its longest
//     run with a delimiter on each side, which is a whole token, from the
//     GIN indexes alone. Other queries (no such run: "ab", `":"`), and the
//     plain store, scan the texts with LIKE '%…%' ESCAPE '!' with !, % and
//     _ of the query escaped, on search_payload (query-string search) or
//     on search_payload OR search_meta (deprecated search). When the
//     pg_trgm extension cannot be created (the role may not), Migrate
//     logs it once and the store works without the vocabulary's trigram
//     index (search_tokens is then scanned).
//   - MySQL/MariaDB: the same LIKE, on columns with a binary collation
//     (utf8mb4_0900_bin, utf8mb4_nopad_bin or utf8mb4_bin), so matching is
//     byte-exact: case-sensitive on the already lower-cased text and never
//     folding accents. There is no substring index; the query is a scan of
//     the rows the other filters leave.
//   - SQLite: the same token index (internal/textindex), in FTS5 tables:
//     the tokens that contain the query's longest run are found in the
//     vocabulary (search_tokens) by its trigram index (search_tokens_text;
//     by three of the run's trigrams, each token found checked by instr),
//     then the events that hold one in events_tokens, a contentless table
//     of each text's tokens and of the event's project (a token that
//     leaves out the projects a caller may not see); a query whose runs
//     are shorter, by the longest one between two delimiters. A query
//     that is one run finds its page there too, without reading the rows
//     of the events it passes over: the first matches by id, in page
//     order when no event up to them is out of creation order (newer than
//     an event with a larger id: events_out_of_order, which the writer,
//     a load and triggers keep), then read from the index alone for a
//     query with no condition but its text, and for one that hides
//     projects, by the matches' rows up to a bound past the page's end,
//     then from the index alone without those projects' events; else
//     sorted by creation and checked against events_created; its total
//     counted in the index (textindex.FindPage). Other queries, the rare ones
//     with characters the tokenizers alter, and the plain store scan with
//     instr(text, ?) > 0, an exact substring test (LIKE in SQLite folds
//     ASCII case). So are the texts of the events a large load or a
//     follower's catch-up left to the index's backlog, until the store
//     has indexed them, and added their tokens to the vocabulary, in the
//     background (textbacklog.go).
//
// Both texts are computed in Go with strings.ToLower, the same function that
// lower-cases the query, and queries cannot contain control characters, so a
// match never spans the newline between two texts: the SQL test is exactly
// strings.Contains, the reference semantics of EventQuery.Matches.
//
// # Writes
//
// A state change and its event are one transaction. UpdateFeature,
// DeleteUser and DeleteToken lock the row (SELECT … FOR UPDATE on
// PostgreSQL and MySQL; SQLite has one writer connection whose
// transactions begin IMMEDIATE), so concurrent calls run one after
// another. Deadlocks and serialization failures are retried a bounded
// number of times. SQLite uses one writer connection and, for a file, a
// separate pool of readers (WAL mode).
//
// Every write transaction ends in record (record.go), which keeps the
// summaries, raises the change counter of flagadmin.VersionedStore (one of
// the rows of store_versions, drawn at random; their sum is the version),
// and appends the events. Event ids are settled in commit order: every
// transaction that appends events holds the event order lock (the one row
// of event_order) from right before it draws their ids to its commit, so a
// smaller id is committed (or rolled back) before a larger one is drawn.
// A reader that follows the log with id > last (ExportEvents, the live
// stream's feed, the keyset export) therefore never misses an id that
// commits later. On PostgreSQL and SQLite a snapshot that sees an id sees
// every smaller committed one. On MySQL it may not: InnoDB takes a
// snapshot while commits go on, and can see a writer's event but not that
// of the writer that committed just before it. So there an export first
// takes the event order lock in share mode (it waits for the writer that
// holds it to commit, and no writer commits events while it holds it),
// reads the highest id, releases it, and reads no id above that one: all
// those are committed and visible to any later snapshot. Writers do
// nothing more; an export waits at most for one writer's commit and holds
// writers back for one read of the primary key's last entry. record.go
// states the lock order every writer follows and the reasons.
//
// The tests that show these rules hold (a change and its events commit
// together, ids commit in order, a pruning batch holds no row writers
// take) put their faults below the store, in the driver's connections:
// WithConnector wraps every pool's connector, and internal/faultsql
// fails, holds or rewrites chosen statements and commits. The store
// itself carries no test machinery.
//
// # Following Unleash
//
// The store implements follow.Target (follow.go), so a server
// can follow a live Unleash into any of the three databases. The follow
// state is the one row of follow_state: the source's identity, the
// position and holes, the synced time and the follow lease, which several
// servers sharing one database contend for with conditional UPDATEs. A
// follower's batch (LoadFollow, ApplyFollow) is one transaction that
// checks the lease first and holds the row's lock to its commit, writes
// the rows (deletes, then upserts by key) and the events with their Unleash
// ids through record, and moves the position: all of it or nothing. While
// the store follows a source, the Service refuses its write operations
// (flagadmin.ReadOnlyError), reading ReadOnly.
//
// # The verifiable log and retention
//
// The store keeps the verifiable log (vlog.Store) in log_leaves
// (one row per event ever written: its index, id, leaf hash, whether it
// was pruned, and its tombstone: created_at, project, type, content, kept
// when the event is pruned; the log's size is the last index + 1, read
// from it), log_hashes (the subtree hashes adapters/tlog stores to speed
// proofs up), log_checkpoints and log_holds. Each event has its salt
// (events.salt, drawn as it is written). The salt and the tombstone are
// NOT NULL, so no writer can add an event or a leaf without them.
// Every write transaction gives its events their salts and checks that
// their leaves can be computed; the leaves are appended after it commits,
// in id order, by one path (leaves.go): the store's appender, woken by
// each commit, reads the events past the last leaf and appends theirs in
// batches, so the event order lock is held only for the events' INSERT
// and COMMIT. Every read of the log waits for the leaves of the store's
// own writes; a read past the last leaf appends those another server left
// (LeafIndex, LogLeaves); Open appends those a stopped server left; Load
// appends them in its transaction. Retention prunes only events whose
// leaves are appended. Proofs
// read the hashes of all their nodes in one statement (LogHashes).
//
// PruneEvents (prune.go) removes a batch of old events in a write
// transaction of its own, through record: event_counts drop them, the
// version rises, their leaves are marked pruned, and the batch's
// events-pruned event is appended as any write appends its events. The
// rule in force (the newest retention-changed event) and the holds are
// read under a prune lock (the one row of log_prune) that HoldProject,
// ReleaseProject and RecordRetention also take. Until its
// event, a batch writes no row a writer writes: its deltas go to a shard
// of event_counts of its own, and it raises a row of store_versions of
// its own.
//
// Driver errors are mapped to flagadmin.ErrNotFound, ErrConflict and
// ErrUnavailable in one function (internal/dberr); the error text never
// contains driver messages or SQL.
package bunstore
