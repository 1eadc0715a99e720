#!/usr/bin/env bash
# Register the shipped models (models/*/Modelfile) in an Ollama models
# directory, so that `OLLAMA_MODELS=MODELS_DIR ollama serve` (started by hiro
# or by hand) serves them:
#
#   hiro-tiny            models/tiny            random weights, ~250 KB
#   hiro-fixture-strong  models/fixture-strong  trained: READY + claim extraction
#   hiro-fixture-weak    models/fixture-weak    the same training stopped early
#
# It starts a temporary `ollama serve` on a free loopback port with HOME in a
# temporary directory, runs `ollama create NAME -f Modelfile` for each model,
# and stops the server. Usage: scripts/prepare-models.sh MODELS_DIR
# The ollama binary: $HIRO_OLLAMA, else ollama on PATH, else
# $(go env GOPATH)/bin/ollama (scripts/install-ollama.sh builds it).
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 MODELS_DIR" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$1"
models_dir="$(cd "$1" && pwd)"

bin="${HIRO_OLLAMA:-}"
if [ -z "$bin" ]; then
  bin="$(command -v ollama || true)"
fi
if [ -z "$bin" ] && command -v go >/dev/null; then
  bin="$(go env GOPATH | cut -d: -f1)/bin/ollama"
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "prepare-models: ollama not found (\$HIRO_OLLAMA, PATH, \$(go env GOPATH)/bin/ollama); run scripts/install-ollama.sh" >&2
  exit 1
fi

# A free loopback port, found with bash alone (no python3, no curl): a
# random one in 20000-32767 that nothing answers on.
port=""
for _ in $(seq 50); do
  p=$((20000 + RANDOM % 12768))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port="$p"; break; fi
done
if [ -z "$port" ]; then
  echo "prepare-models: found no free loopback port in 50 tries" >&2
  exit 1
fi
echo "prepare-models: registering hiro-tiny, hiro-fixture-strong and hiro-fixture-weak in $models_dir (a temporary ollama serve on 127.0.0.1:$port; seconds)" >&2
tmp="$(mktemp -d)"
log="$tmp/serve.log"
export HOME="$tmp" OLLAMA_HOST="127.0.0.1:$port" OLLAMA_MODELS="$models_dir"
setsid "$bin" serve >"$log" 2>&1 &
pid=$!
cleanup() {
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

for _ in $(seq 300); do
  if "$bin" list >/dev/null 2>&1; then break; fi # the client asks OLLAMA_HOST
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "prepare-models: ollama serve exited; its log:" >&2
    tail -20 "$log" >&2
    exit 1
  fi
  sleep 0.1
done

for pair in hiro-tiny:tiny hiro-fixture-strong:fixture-strong hiro-fixture-weak:fixture-weak; do
  name="${pair%%:*}"
  dir="$root/models/${pair#*:}"
  if ! (cd "$dir" && "$bin" create "$name" -f Modelfile >"$tmp/create.log" 2>&1); then
    echo "prepare-models: ollama create $name -f $dir/Modelfile failed:" >&2
    tail -5 "$tmp/create.log" >&2
    exit 1
  fi
  echo "prepared $name from $dir"
done
echo "models in $models_dir (serve with OLLAMA_MODELS=$models_dir)"
