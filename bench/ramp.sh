#!/usr/bin/env bash
# What a progressive ramp costs the clients (issue 27, "What it costs"):
# BenchmarkRampFailedRequests runs `hiro serve` (the real binary) in
# front of two fake engines and vegeta sending chat requests at a constant
# rate while the router ramps 1, 5, 25, 100 %, in two scenarios:
#   clean       nothing goes wrong: the ramp completes;
#   slow-at-25  the candidate becomes 300 ms slower as the 25 % step
#               begins: the ramp must reverse on latency.
# Goal: 0 failed requests in both. Prints each scenario's failed
# requests, requests, client p99, and the time to completion or the
# reversal time (slowdown to reversal; health_interval 500 ms).
#
#   bench/ramp.sh                       # 500 requests/s
#   HIRO_BENCH_RATE=1000 bench/ramp.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
go test ./internal/serve -run '^$' -bench 'RampFailedRequests' -benchtime 1x -timeout 20m "$@" | tee "$out"
echo
echo "rate ${HIRO_BENCH_RATE:-500}/s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
awk '/^BenchmarkRampFailedRequests\// {
  name = $1; sub(/^BenchmarkRampFailedRequests\//, "", name); sub(/-[0-9]+$/, "", name)
  delete v
  for (i = 3; i < NF; i += 2) v[$(i+1)] = $i
  end = ("ramp_s" in v) ? sprintf("completed in %.1f s", v["ramp_s"]) : sprintf("reversed %.0f ms after the slowdown", v["reversal_ms"])
  printf "%-11s  %d failed of %d requests  p99 %.1f ms  %s\n", name, v["failed_requests"], v["requests"], v["p99_ms"], end
}' "$out"
