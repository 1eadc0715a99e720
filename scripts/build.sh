#!/usr/bin/env bash
# Builds hiro and the fake engine (test support) into .bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .bin
go build -o .bin/hiro ./cmd/hiro
go build -o .bin/hiro-fake-engine ./cmd/hiro-fake-engine
echo "built .bin/hiro and .bin/hiro-fake-engine" >&2
