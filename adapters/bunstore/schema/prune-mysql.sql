-- Retention's own row of the change counter on MySQL: migration
-- 20261127000004 (migrations.go, prune.go). It may run again.

-- Row 16 of store_versions, raised only by a pruning batch, under the
-- prune lock: a batch holds no row of store_versions a writer raises.
INSERT IGNORE INTO store_versions (shard, v) VALUES (16, 0)
