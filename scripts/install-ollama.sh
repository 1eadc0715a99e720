#!/usr/bin/env bash
# Install the reference engine: Ollama v0.6.5 built from the Go module proxy
# (CPU only, through cgo). Idempotent: it installs Debian's nlohmann-json3-dev
# only when missing, and builds only when $(go env GOPATH)/bin/ollama does not
# already report the module version. Prints the binary's path on stdout.
#
# Newer versions (v0.11.10, v0.17.4) do not build this way: their module
# archives lack the vendored miniaudio header. A cold build takes about
# 3 minutes on 2 cores; the Go build cache makes later ones seconds.
# Built this way /api/version answers 0.0.0; `go version -m BINARY` has the
# real version.
set -euo pipefail

version="${OLLAMA_VERSION:-v0.6.5}"
module="github.com/ollama/ollama"

if ! command -v go >/dev/null; then
  echo "install-ollama: go is not on PATH; install Go first" >&2
  exit 1
fi
bin="$(go env GOPATH | cut -d: -f1)/bin/ollama"

if [ -x "$bin" ] && go version -m "$bin" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+${module}[[:space:]]+${version}([[:space:]]|$)"; then
  echo "install-ollama: $bin is already ${module}@${version}" >&2
  echo "$bin"
  exit 0
fi

if ! dpkg-query -W -f='${Status}' nlohmann-json3-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "install-ollama: installing nlohmann-json3-dev (needed by Ollama's cgo build)" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq nlohmann-json3-dev >&2
fi

echo "install-ollama: building ${module}@${version}: about 3 minutes cold on 2 idle cores, 10-25 minutes on a busy machine; the cgo build of llama.cpp prints nothing, so a line every minute says it is still going" >&2
source "$(dirname "$0")/heartbeat.sh"
start=$SECONDS
if ! heartbeat_run install-ollama "${module}@${version} (cgo, llama.cpp)" go install "${module}@${version}" >&2; then
  echo "install-ollama: go install ${module}@${version} failed (its output is above)" >&2
  exit 1
fi
if ! go version -m "$bin" | grep -q "${module}[[:space:]]*${version}"; then
  echo "install-ollama: built $bin but it does not report ${module} ${version}" >&2
  exit 1
fi
echo "install-ollama: built $bin in $(( SECONDS - start )) s" >&2
echo "$bin"
