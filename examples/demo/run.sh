#!/usr/bin/env bash
# The demo: one hiro campaign with both backends real. It installs the
# reference engine if needed, builds hiro, registers the project's models,
# freezes a 6-source corpus from ../shared/corpora/factcheck-gpt, starts
# production, runs every gate, writes the evidence and a journal entry, and
# builds the journal site. Exit status: hiro qualify's (0 qualified, 1 not).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
./scripts/install-ollama.sh >&2 || exit 2
export PATH="$(go env GOPATH)/bin:$PATH"
./scripts/build.sh || exit 2
./scripts/prepare-models.sh "$root/.hiro/ollama-models" >&2 || exit 2
hiro="$root/.bin/hiro --config $here/hiro.toml"

corpus_src="$root/../shared/corpora/factcheck-gpt/factcheck-GPT-benchmark.jsonl"
if [ ! -d .hiro/corpora/factcheck-gpt-6 ]; then
  if [ ! -f "$corpus_src" ]; then
    echo "demo: $corpus_src is absent: the semantic gate needs it (../shared beside the repository)" >&2
    exit 2
  fi
  $hiro corpus import factcheck-gpt "$corpus_src" --take 6 --out .hiro/corpora/factcheck-gpt-6 || exit 2
fi
$hiro corpus verify .hiro/corpora/factcheck-gpt-6 || exit 2

$hiro backend stop production >/dev/null 2>&1 || true
$hiro backend start production || exit 2

$hiro qualify "$here/plan.toml"
code=$?
latest="$(ls -td "$root"/.hiro/evidence/demo/*/ | head -n 1)"
cat "${latest}report.md"
$hiro journal add "${latest}evidence.json" --journal "$root/.hiro/journal" &&
  $hiro journal build --journal "$root/.hiro/journal" --out "$root/.hiro/journal-site" &&
  echo "journal: $root/.hiro/journal-site/index.html" >&2
if [ "${KEEP_PRODUCTION:-0}" != 1 ]; then
  $hiro backend stop production
fi
echo "hiro qualify exited $code" >&2
exit $code
