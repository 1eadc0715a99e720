#!/usr/bin/env bash
# Extraction throughput: hiro vs a bare net/http client, same engine, same
# requests, same concurrency, same run (issue 5: hiro >= 0.95 x bare).
# Starts a private Ollama (internal/ollamatest) on a free port serving
# hiro-fixture-strong (or HIRO_EXTRACT_MODEL: hiro-tiny, hiro-fixture-weak)
# with OLLAMA_NUM_PARALLEL equal to the concurrency.
#
#   bench/extract-throughput.sh            # 6-source Factcheck-GPT corpus
#   HIRO_BENCH_CORPUS=corpora/hiro-mini HIRO_BENCH_CONCURRENCY=4 HIRO_BENCH_ROUNDS=3 bench/extract-throughput.sh
#
# Prints the Go benchmark line with bare-tok/s, hiro-tok/s and hiro/bare.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go test ./internal/extract -run '^$' -bench 'OllamaThroughput' -benchtime 1x -timeout 60m -v "$@"
