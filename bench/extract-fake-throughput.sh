#!/usr/bin/env bash
# Extraction client throughput (issue 15): the real `hiro extract` command
# against a bare net/http client, same fake engine (cmd/hiro-fake-engine
# --chat claims: answers at once with claims quoting the sentence, so
# validation does real work), same requests, same concurrency, same run.
# Goal at concurrency 64: hiro >= 0.5 x bare requests/s.
#
#   bench/extract-fake-throughput.sh
#   HIRO_BENCH_CONCURRENCY=8 HIRO_BENCH_COPIES=20 bench/extract-fake-throughput.sh
#
# Prints the Go benchmark line with bare-req/s, hiro-req/s, hiro/bare and the
# load average before the run (the machine is shared: note it with the figures).
set -euo pipefail
cd "$(dirname "$0")/.."
uptime
exec go test ./internal/extract -run '^$' -bench 'FakeThroughput' -benchtime 1x -timeout 30m -v "$@"
