-- Leaf format v1 required on SQLite: migration 20261202000002
-- (migrations.go, leafv1required.go). A flagadmin older than leaf format
-- v1 writes events without a salt and leaves without their tombstone;
-- SQLite cannot make a column NOT NULL after the fact, so these triggers
-- abort such a write instead, before it breaks the log.

CREATE TRIGGER IF NOT EXISTS events_salt_required BEFORE INSERT ON events
WHEN NEW.salt IS NULL
BEGIN
  SELECT RAISE(ABORT, 'flagadmin: an event without a salt: this database uses leaf format v1 of the verifiable log, which this flagadmin predates; run a newer one');
END

CREATE TRIGGER IF NOT EXISTS log_leaves_tombstone_required BEFORE INSERT ON log_leaves
WHEN NEW.content IS NULL OR NEW.created_at IS NULL OR NEW.type IS NULL
BEGIN
  SELECT RAISE(ABORT, 'flagadmin: a leaf without its tombstone: this database uses leaf format v1 of the verifiable log, which this flagadmin predates; run a newer one');
END
