#!/usr/bin/env bash
# Eval numbers of the two fixture models (issue 7) on the factcheck-gpt
# corpora: imports the 6- and 20-source corpora from ../shared, starts one
# Ollama (the reference engine) serving both models, extracts each corpus
# through each model with `hiro extract`, scores with `hiro eval`, and
# prints one line per (model, corpus). Slow on a 2-core CPU machine
# (tens of minutes); MAX_TOKENS and MAX_REPAIRS bound the work.
#
# Usage: bench/fixture-eval.sh [OUTDIR]     (default .hiro/fixture-eval)
#        MODELS="strong" SIZES="6" bench/fixture-eval.sh   (a subset; runs resume)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="${1:-$root/.hiro/fixture-eval}"
max_tokens="${MAX_TOKENS:-384}"
max_repairs="${MAX_REPAIRS:-0}"
port="${PORT:-11600}"
src="$root/../shared/corpora/factcheck-gpt/factcheck-GPT-benchmark.jsonl"
[ -f "$src" ] || { echo "fixture-eval: $src is absent" >&2; exit 2; }
./scripts/install-ollama.sh >/dev/null
export PATH="$(go env GOPATH)/bin:$PATH"
./scripts/build.sh
./scripts/prepare-models.sh "$root/.hiro/ollama-models" >/dev/null
mkdir -p "$out"
cat > "$out/hiro.toml" <<TOML
state_dir = "state"
[backends.server]
engine = "ollama"
command = "ollama"
args = ["serve"]
inherit_env = ["PATH", "HOME"]
port = $port
model = "hiro-fixture-strong"
env = { OLLAMA_HOST = "127.0.0.1:$port", OLLAMA_MODELS = "$root/.hiro/ollama-models", OLLAMA_KEEP_ALIVE = "-1", OLLAMA_NUM_PARALLEL = "1" }
[backends.strong]
engine = "ollama"
unmanaged = true
base_url = "http://127.0.0.1:$port"
model = "hiro-fixture-strong"
[backends.weak]
engine = "ollama"
unmanaged = true
base_url = "http://127.0.0.1:$port"
model = "hiro-fixture-weak"
TOML
hiro="$root/.bin/hiro --config $out/hiro.toml"
for n in 6 20; do
  [ -d "$out/factcheck-gpt-$n" ] || $hiro corpus import factcheck-gpt "$src" --take $n --out "$out/factcheck-gpt-$n" >/dev/null
done
$hiro backend start server >/dev/null
trap '$hiro backend stop server >/dev/null' EXIT
for model in ${MODELS:-strong weak}; do
  for n in ${SIZES:-6 20}; do
    run="$out/run-$model-$n"
    start=$(date +%s)
    $hiro extract --corpus "$out/factcheck-gpt-$n" --backend $model --out "$run" \
      --concurrency 1 --max-tokens "$max_tokens" --max-repairs "$max_repairs" >"$run.log" 2>&1 && code=0 || code=$?
    if [ "$code" -ge 2 ]; then
      echo "fixture-eval: hiro extract exited $code for $model on factcheck-gpt-$n:" >&2
      tail -3 "$run.log" >&2
      exit "$code"
    fi
    secs=$(( $(date +%s) - start ))
    $hiro eval --corpus "$out/factcheck-gpt-$n" --claims "$run/claims.jsonl" --json > "$run/eval.json"
    python3 - "$run/eval.json" "$model" "$n" "$secs" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
o = r["overall"]
sv = r.get("schema_valid_rate")
print(f"{sys.argv[2]:6} factcheck-gpt-{sys.argv[3]:<2}  precision {o['precision']:.3f}  coverage {o['coverage']:.3f}  F1 {o['f1']:.3f}  "
      f"grounding {o['grounding_rate']:.3f}  schema-valid {sv if sv is None else round(sv,3)}  duplicates {o.get('duplicate_rate', 0):.3f}  "
      f"predicted {o.get('predicted')}  gold {o.get('gold')}  ({sys.argv[4]} s)")
PY
  done
done
