#!/usr/bin/env bash
# Runs hiro's tests as CI does: installs what the tests need (the reference
# engine Ollama v0.6.5 built from the Go module proxy, Debian's chromium for
# the journal's browser tests), then gofmt, go vet and the race-enabled test
# suite. The first Ollama build takes minutes; the Go build cache makes
# later ones seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-ollama.sh >&2
export PATH="$(go env GOPATH)/bin:$PATH"

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test: installing Debian's chromium for the journal's browser tests" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) ||
      echo "test: chromium could not be installed; the browser tests will skip" >&2
  else
    echo "test: chromium not found and not root: the browser tests will skip" >&2
  fi
fi

unformatted="$(gofmt -l ./cmd ./internal)"
if [ -n "$unformatted" ]; then
  echo "test: gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi
go vet ./...
go test -race -count=1 -timeout 40m ./...
