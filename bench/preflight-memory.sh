#!/usr/bin/env bash
# The preflight's memory estimate against what real CUDA Ollama v0.6.5
# took on an H200 (examples/gpu/results/memory, made there by
# scripts/gpu/memory.sh): one Markdown row per load, predicted (low–high),
# actual (nvidia-smi's per-process memory of the runner), error. The
# llama-3.2-1b rows fitted the overhead constant; the others test it.
#
#   bench/preflight-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
go test -count=1 -v -run '^TestMeasuredMemory$' ./internal/preflight | sed -n 's/^ *measured_test.go:[0-9]*: //p'
