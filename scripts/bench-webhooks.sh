#!/usr/bin/env bash
# Webhook delivery throughput of one sink (adapters/webhooks
# BenchmarkDelivery): a backlog of N events delivered to a local receiver
# that checks every signature, the position stored after each event, on
# memory, SQLite, PostgreSQL and MariaDB (those whose DSN is set).
#
#   scripts/bench-webhooks.sh            # N = 20000, 3 runs each
#   N=50000 COUNT=5 scripts/bench-webhooks.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${FLAGADMIN_TEST_POSTGRES_DSN:=postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
: "${FLAGADMIN_TEST_MYSQL_DSN:=mysql://root@127.0.0.1:3306/test}"
export FLAGADMIN_TEST_POSTGRES_DSN FLAGADMIN_TEST_MYSQL_DSN
go test ./adapters/webhooks -run '^$' -bench 'BenchmarkDelivery' \
	-benchtime "${N:-20000}x" -count "${COUNT:-3}"
