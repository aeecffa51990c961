-- The schema the development versions' 17 migrations made on MySQL/MariaDB ({collation}: the binary collation the migrations chose) (names
-- 20250601000001 to 20250601000017 in bun_migrations), as the database
-- dumped it: the database carryover_test.go carries over to the baseline.
-- Statements are separated by blank lines.

CREATE TABLE `users` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `name` text NOT NULL,
  `username` text NOT NULL,
  `email` text NOT NULL,
  `root_role` varchar(64) NOT NULL,
  `is_service` tinyint(1) NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `user_groups` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `name` text NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `projects` (
  `id` varchar(255) NOT NULL,
  `name` text NOT NULL,
  `description` text NOT NULL,
  `mode` varchar(64) NOT NULL,
  `created_at` bigint(20) NOT NULL,
  `archived_at` bigint(20) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `projects_mode` (`mode`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `group_members` (
  `group_id` bigint(20) NOT NULL,
  `user_id` bigint(20) NOT NULL,
  PRIMARY KEY (`group_id`,`user_id`),
  KEY `group_members_user` (`user_id`),
  CONSTRAINT `group_members_ibfk_1` FOREIGN KEY (`group_id`) REFERENCES `user_groups` (`id`) ON DELETE CASCADE,
  CONSTRAINT `group_members_ibfk_2` FOREIGN KEY (`user_id`) REFERENCES `users` (`id`) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `project_members` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `project_id` varchar(255) NOT NULL,
  `user_id` bigint(20) DEFAULT NULL,
  `group_id` bigint(20) DEFAULT NULL,
  `role` varchar(64) NOT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `project_id` (`project_id`,`user_id`),
  UNIQUE KEY `project_id_2` (`project_id`,`group_id`),
  KEY `project_members_user` (`user_id`),
  KEY `project_members_group` (`group_id`),
  CONSTRAINT `project_members_ibfk_1` FOREIGN KEY (`project_id`) REFERENCES `projects` (`id`) ON DELETE CASCADE,
  CONSTRAINT `project_members_ibfk_2` FOREIGN KEY (`user_id`) REFERENCES `users` (`id`) ON DELETE CASCADE,
  CONSTRAINT `project_members_ibfk_3` FOREIGN KEY (`group_id`) REFERENCES `user_groups` (`id`) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `project_favorites` (
  `project_id` varchar(255) NOT NULL,
  `user_id` bigint(20) NOT NULL,
  PRIMARY KEY (`project_id`,`user_id`),
  KEY `project_favorites_user` (`user_id`),
  CONSTRAINT `project_favorites_ibfk_1` FOREIGN KEY (`project_id`) REFERENCES `projects` (`id`) ON DELETE CASCADE,
  CONSTRAINT `project_favorites_ibfk_2` FOREIGN KEY (`user_id`) REFERENCES `users` (`id`) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `features` (
  `name` varchar(255) NOT NULL,
  `project` varchar(255) NOT NULL,
  `type` varchar(64) NOT NULL,
  `stale` tinyint(1) NOT NULL,
  `created_at` bigint(20) NOT NULL,
  `archived_at` bigint(20) DEFAULT NULL,
  `last_seen_at` bigint(20) DEFAULT NULL,
  `tags` longtext DEFAULT NULL,
  `lifecycle_stage` varchar(64) NOT NULL,
  `lifecycle_status` varchar(64) NOT NULL,
  `lifecycle_status_value` text NOT NULL,
  PRIMARY KEY (`name`),
  KEY `features_project` (`project`),
  KEY `features_fresh` (`type`,`created_at`),
  CONSTRAINT `features_ibfk_1` FOREIGN KEY (`project`) REFERENCES `projects` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `api_tokens` (
  `secret_hash` varchar(255) NOT NULL,
  `name` text NOT NULL,
  `type` varchar(64) NOT NULL,
  `user_id` bigint(20) DEFAULT NULL,
  `project` text NOT NULL,
  `environment` text NOT NULL,
  `expires_at` bigint(20) DEFAULT NULL,
  `created_at` bigint(20) NOT NULL,
  PRIMARY KEY (`secret_hash`),
  KEY `api_tokens_user` (`user_id`),
  CONSTRAINT `api_tokens_ibfk_1` FOREIGN KEY (`user_id`) REFERENCES `users` (`id`) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `events` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `created_at` bigint(20) NOT NULL,
  `type` varchar(255) NOT NULL,
  `created_by` text NOT NULL,
  `created_by_user_id` bigint(20) DEFAULT NULL,
  `environment` varchar(700) DEFAULT NULL,
  `project` varchar(700) DEFAULT NULL,
  `feature_name` varchar(700) DEFAULT NULL,
  `data` longtext DEFAULT NULL,
  `pre_data` longtext DEFAULT NULL,
  `tags` longtext DEFAULT NULL,
  `group_id` bigint(20) DEFAULT NULL,
  `search_payload` longtext NOT NULL,
  `search_meta` text NOT NULL,
  PRIMARY KEY (`id`),
  KEY `events_feature` (`feature_name`,`created_at`,`id`),
  KEY `events_project` (`project`,`created_at`,`id`),
  KEY `events_type` (`type`,`created_at`,`id`),
  KEY `events_created_by_user` (`created_by_user_id`,`created_at`,`id`),
  KEY `events_environment` (`environment`,`created_at`,`id`),
  KEY `events_group` (`group_id`,`created_at`,`id`),
  KEY `events_created` (`created_at`,`id`,`project`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `event_counts` (
  `dim` varchar(64) NOT NULL,
  `val` varchar(700) NOT NULL,
  `n` bigint(20) NOT NULL,
  PRIMARY KEY (`dim`,`val`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `project_stats` (
  `project_id` varchar(255) NOT NULL,
  `features` bigint(20) NOT NULL,
  `stale` bigint(20) NOT NULL,
  `fresh_release` bigint(20) NOT NULL,
  `fresh_experiment` bigint(20) NOT NULL,
  `fresh_operational` bigint(20) NOT NULL,
  `fresh_kill_switch` bigint(20) NOT NULL,
  `fresh_permission` bigint(20) NOT NULL,
  `members` bigint(20) NOT NULL,
  `last_seen_at` bigint(20) DEFAULT NULL,
  PRIMARY KEY (`project_id`),
  CONSTRAINT `project_stats_ibfk_1` FOREIGN KEY (`project_id`) REFERENCES `projects` (`id`) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `store_versions` (
  `shard` smallint(6) NOT NULL,
  `v` bigint(20) NOT NULL,
  PRIMARY KEY (`shard`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `project_last_events` (
  `project` varchar(700) NOT NULL,
  `shard` smallint(6) NOT NULL,
  `last_event_at` bigint(20) NOT NULL,
  PRIMARY KEY (`project`,`shard`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `event_order` (
  `id` smallint(6) NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `webhook_sinks` (
  `name` varchar(255) NOT NULL,
  `after_id` bigint(20) NOT NULL,
  `delivered` bigint(20) NOT NULL,
  `attempts` int(11) NOT NULL,
  `last_error` text NOT NULL,
  `last_error_at` bigint(20) NOT NULL,
  `holder` varchar(255) NOT NULL,
  `lease_until` bigint(20) NOT NULL,
  `seq` bigint(20) NOT NULL,
  `created_at` bigint(20) NOT NULL,
  PRIMARY KEY (`name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE `bun_migrations` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `name` varchar(255) DEFAULT NULL,
  `group_id` bigint(20) DEFAULT NULL,
  `migrated_at` datetime NOT NULL DEFAULT current_timestamp(),
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci

CREATE TABLE `bun_migration_locks` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `table_name` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `table_name` (`table_name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci

INSERT INTO event_order (id) VALUES (1)

INSERT INTO store_versions (shard, v) VALUES (0, 1795721985835), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (8, 0), (9, 0), (10, 0), (11, 0), (12, 0), (13, 0), (14, 0), (15, 0)

INSERT INTO bun_migrations (name, group_id) VALUES ('20250601000001', 1), ('20250601000002', 1), ('20250601000003', 1), ('20250601000004', 1), ('20250601000005', 1), ('20250601000006', 1), ('20250601000007', 1), ('20250601000008', 1), ('20250601000009', 1), ('20250601000010', 1), ('20250601000011', 1), ('20250601000013', 1), ('20250601000014', 1), ('20250601000016', 1), ('20250601000017', 1)
