#!/usr/bin/env bash
# Builds hiro and the fake engine (test support) into .bin/.
# The VCS revision, its commit time and a 'git describe' name are stamped
# with -ldflags -X ('hiro version' prints them): GOFLAGS=-buildvcs=false,
# common in CI, turns Go's own stamping off.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .bin
ldflags=""
if rev="$(git rev-parse HEAD 2>/dev/null)"; then
  if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    rev="$rev-dirty"
  fi
  when="$(git log -1 --format=%cI HEAD)"
  name="$(git describe --tags --always --dirty 2>/dev/null || echo devel)"
  ldflags="-X github.com/hiro-dev/hiro/internal/version.Version=$name"
  ldflags+=" -X github.com/hiro-dev/hiro/internal/version.Revision=$rev"
  ldflags+=" -X github.com/hiro-dev/hiro/internal/version.Time=$when"
fi
source scripts/heartbeat.sh
echo "build: building .bin/hiro and .bin/hiro-fake-engine (go build): about 4 minutes cold on 2 idle cores, up to 30 on a busy machine, seconds with a warm Go build cache; a line every minute says it is still going" >&2
start=$SECONDS
heartbeat_run build "hiro (go build)" go build -ldflags "$ldflags" -o .bin/hiro ./cmd/hiro
heartbeat_run build "the fake engine (go build)" go build -o .bin/hiro-fake-engine ./cmd/hiro-fake-engine
echo "build: built .bin/hiro and .bin/hiro-fake-engine in $(( SECONDS - start )) s" >&2
