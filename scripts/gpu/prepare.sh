#!/usr/bin/env bash
# Prepares what a CUDA machine without Go or network needs to run hiro's GPU
# campaign (scripts/gpu/run.sh) and memory measurements
# (scripts/gpu/memory.sh): stripped and gzipped hiro and Ollama v0.6.5
# binaries, and the ggml sources of the same Ollama module (CMake project)
# from which run.sh builds the CUDA backend there. Output: DIR (default
# .gpu/ in the repository, which git ignores), at most about 15 MB.
#
#   scripts/gpu/prepare.sh [DIR]
#
# Needs Go and the Ollama module in the Go module cache
# (scripts/install-ollama.sh puts both there).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/.gpu}"
mkdir -p "$out"
cd "$root"
./scripts/install-ollama.sh >&2
mod="$(go env GOMODCACHE)/github.com/ollama/ollama@v0.6.5"
[ -d "$mod" ] || { echo "prepare: $mod missing; run scripts/install-ollama.sh" >&2; exit 1; }
ollama="$(go env GOPATH | cut -d: -f1)/bin/ollama"

tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
rev="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.revision=$rev" -o "$tmp/hiro" ./cmd/hiro
strip -o "$tmp/ollama" "$ollama"
gzip -9c "$tmp/hiro" >"$out/hiro.gz"
# hiro-fixture writes the real-shape GGUFs of scripts/gpu/memory.sh.
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/hiro-fixture" ./cmd/hiro-fixture
gzip -9c "$tmp/hiro-fixture" >"$out/hiro-fixture.gz"
gzip -9c "$tmp/ollama" >"$out/ollama.gz"
# The CMake project of the module: its top CMakeLists and the ggml tree.
tar -C "$mod" -cJf "$out/ggml-src.tar.xz" CMakeLists.txt CMakePresets.json ml/backend/ggml/ggml
cp "$root/scripts/gpu/run.sh" "$out/run.sh"
du -sh "$out"/* >&2
