#!/usr/bin/env bash
# Install the reference engine: Ollama v0.6.5 built from the Go module proxy
# (CPU only, through cgo). Idempotent: it installs Debian's nlohmann-json3-dev
# only when missing, and builds only when $(go env GOPATH)/bin/ollama does not
# already report the module version and the cgo flags chosen below. Prints
# the binary's path on stdout.
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

# The engine's matrix code (llama.cpp's ggml, C and C++ through cgo) is
# compiled for x86-64-v3 (AVX2, FMA, F16C) when this processor has those:
# cgo's default flags give baseline x86-64 (SSE2), and then Ollama reads a
# prompt about 10 times slower (the fixture model's extraction requests:
# 6.4 s against 0.6 s each on the same machine). HIRO_OLLAMA_CFLAGS
# overrides the choice ("" for the default flags).
vector_flags() {
  [ "$(uname -m)" = x86_64 ] && [ -r /proc/cpuinfo ] || return 0
  local flags
  flags="$(grep -m1 '^flags' /proc/cpuinfo)"
  for f in avx avx2 fma f16c bmi1 bmi2 movbe abm; do
    case " $flags " in *" $f "*) ;; *) return 0 ;; esac
  done
  echo "-O3 -march=x86-64-v3"
}
cflags="${HIRO_OLLAMA_CFLAGS-$(vector_flags)}"

# built_flags prints the CGO_CFLAGS the binary was built with (unquoted).
built_flags() {
  go version -m "$bin" 2>/dev/null | sed -n 's/^[[:space:]]*build[[:space:]]*CGO_CFLAGS=//p' | tr -d '"'
}

if [ -x "$bin" ] && go version -m "$bin" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+${module}[[:space:]]+${version}([[:space:]]|$)"; then
  if [ "$(built_flags)" = "$cflags" ]; then
    echo "install-ollama: $bin is already ${module}@${version}${cflags:+ (cgo flags $cflags)}" >&2
    echo "$bin"
    exit 0
  fi
  echo "install-ollama: $bin is ${module}@${version} built with cgo flags '$(built_flags)'; rebuilding it with '$cflags' (vector instructions: prompts read about 10 times faster)" >&2
fi

if ! dpkg-query -W -f='${Status}' nlohmann-json3-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "install-ollama: installing nlohmann-json3-dev (needed by Ollama's cgo build)" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq nlohmann-json3-dev >&2
fi

echo "install-ollama: building ${module}@${version}${cflags:+ with cgo flags $cflags}: about 3 minutes cold on 2 idle cores, 10-25 minutes on a busy machine; a line every minute says it is still going, and the C/C++ compiler's output (pages of harmless gcc warnings about llama.cpp's code) goes to a log, shown in full only if the build fails" >&2
source "$(dirname "$0")/heartbeat.sh"
start=$SECONDS
if [ -n "$cflags" ]; then
  export CGO_CFLAGS="$cflags" CGO_CXXFLAGS="$cflags"
fi
build_log="$(mktemp "${TMPDIR:-/tmp}/install-ollama.XXXXXX")"
# logged FILE CMD...: runs CMD with its output in FILE (the heartbeat's
# lines still reach the terminal).
logged() {
  local file="$1"
  shift
  "$@" >"$file" 2>&1
}
if ! heartbeat_run install-ollama "${module}@${version} (cgo, llama.cpp)" logged "$build_log" go install "${module}@${version}"; then
  cat "$build_log" >&2
  echo "install-ollama: go install ${module}@${version} failed (its output is above, and in $build_log)" >&2
  exit 1
fi
# gcc's warnings on llama.cpp's vendored ggml code (-Wstringop-overflow in
# ggml-cpu-aarch64.cpp and the like) are harmless: the build succeeded.
warnings="$(grep -c ': warning: ' "$build_log" || true)"
if [ "$warnings" -gt 0 ]; then
  [ "$warnings" -eq 1 ] && noun=warning || noun=warnings
  echo "install-ollama: the C/C++ compiler printed $warnings $noun on llama.cpp's code (gcc's -Wstringop-overflow and the like): harmless, the build succeeded; the output is in $build_log" >&2
elif [ -s "$build_log" ]; then
  cat "$build_log" >&2
  rm -f "$build_log"
else
  rm -f "$build_log"
fi
if ! go version -m "$bin" | grep -q "${module}[[:space:]]*${version}"; then
  echo "install-ollama: built $bin but it does not report ${module} ${version}" >&2
  exit 1
fi
echo "install-ollama: built $bin in $(( SECONDS - start )) s" >&2
echo "$bin"
