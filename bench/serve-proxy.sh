#!/usr/bin/env bash
# Router overhead (issue 13): the fake engine answering at once, measured
# directly, through a plain standard-library reverse proxy with a tuned
# transport (hiro-fake-engine --proxy-to), and through `hiro serve` (the
# real binary, access log and metrics on), in interleaved rounds:
#   - latency with one client (p50, p99) and the added latency vs direct;
#   - requests/s with 8 clients and the ratio to direct;
#   - time to first byte of a streamed completion, added vs direct;
# each as the median over the rounds with its spread (min-max), with the
# load average before and after each round (the machine may be shared).
# Then the peak RSS of each proxy with 256 concurrent streaming clients.
#
# Goals: added p50 <= 100 µs, added p99 <= 0.5 ms, req/s >= 0.4 x direct,
# added TTFB <= 100 µs, RSS <= 40 MB.
#
# Shadow traffic (issue 27, docs/shadow.md): the same router with a mirror
# to a second fake engine, in paired interleaved rounds (off, on; then
# on, off): the added p50 with its interval (Hodges-Lehmann shift), and
# the peak RSS at 256 streams of a router with the mirror on against one
# without. Goals: added p50 <= 10 µs, RSS within 10 MB.
#   HIRO_BENCH_SHADOW_SHARE=0.1 bench/serve-proxy.sh   # mirror 10 % (default: every request)
#   HIRO_BENCH_HIRO_BASE=self HIRO_BENCH_BASE_ENV=HIRO_SHADOW_IDLE_WAIT=0 bench/serve-proxy.sh
#       # adds the same hiro with the mirror's idle gate off, as hiro-base (paired, same rounds)
#
#   bench/serve-proxy.sh                                   # 5 rounds of 2 s per measurement
#   HIRO_BENCH_ROUNDS=9 HIRO_BENCH_SECONDS=3 bench/serve-proxy.sh
#   HIRO_BENCH_ENV="GOMAXPROCS=1" bench/serve-proxy.sh             # runtime settings for hiro serve only
#   HIRO_BENCH_LLAMA_SWAP=/path/to/llama-swap bench/serve-proxy.sh  # adds llama-swap (its defaults) to each round
#   HIRO_BENCH_HIRO_BASE=/path/to/old/hiro bench/serve-proxy.sh     # adds an older hiro (before a change) as hiro-base
set -euo pipefail
cd "$(dirname "$0")/.."
go test ./internal/serve -run '^$' -bench 'RouterOverhead|RouterStreamingRSS|ShadowOverhead|ShadowStreamingRSS' -benchtime 1x -timeout 30m "$@"
