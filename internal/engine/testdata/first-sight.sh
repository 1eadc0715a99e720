#!/usr/bin/env bash
# Rebuilds first-sight.json: every held-out set's verdicts as the binary of
# its scoring time gave them, before the set was read (first-sight.md).
#
#   internal/engine/testdata/first-sight.sh > internal/engine/testdata/first-sight.json
#
# For each set it checks out the commit in a scratch worktree
# (FIRST_SIGHT_WT, default /tmp/hiro-first-sight-wt), builds hiro there,
# extracts the set's folder as it was at that commit (or at the commit
# that froze it, when it landed after that binary), runs
# 'hiro diagnose LOG --engine K [--exit N | --signal S] [--requires-accelerator] --json'
# on every case and 'hiro diagnose --coverage --json' on the set (whose
# list of wrong cases says which cases were right in full: class, phase,
# root cause, facts and serving device). Needs git, go and jq.
# FIRST_SIGHT_BINS: a folder of hiro-<short commit> binaries built before;
# FIRST_SIGHT_SETS: only these sets ("r3a r3b").
set -euo pipefail
cd "$(dirname "$0")/../../.."
wt="${FIRST_SIGHT_WT:-/tmp/hiro-first-sight-wt}"
tmp="$(mktemp -d)"
made=""
trap 'rm -rf "$tmp"; [ -z "$made" ] || git worktree remove --force "$wt"' EXIT

# set name, commit scored with, folder of the set, and the commit the
# folder is taken from when the set landed after the binary that scored it
# (default: the commit scored with)
sets=(
  "r1 70495a1^ internal/engine/heldout"
  "r2 10474a5 internal/engine/heldout"
  "r3a 6400073^ internal/engine/heldout-r3a"
  "r3b 6400073^ internal/engine/heldout-r3b"
  "r4a 9f40101 internal/engine/heldout-r4a"
  "r4b 9f40101 internal/engine/heldout-r4b"
  "r5a 7a15fe6 internal/engine/heldout-r5a"
  "r5b 7a15fe6 internal/engine/heldout-r5b"
  "r6a 311ec7e internal/engine/heldout-r6a"
  "r6b 311ec7e internal/engine/heldout-r6b"
  "r7a 27604cf internal/engine/heldout-r7a"
  "r7b 27604cf internal/engine/heldout-r7b"
  "r8a 45ca3ba internal/engine/heldout-r8a 62dda72"
  "r8b 45ca3ba internal/engine/heldout-r8b 446598f"
  "r9a c55bf2b internal/engine/heldout-r9a 7fd6c37"
  "r9b c55bf2b internal/engine/heldout-r9b 926b52b"
  "r10a ef738e0 internal/engine/heldout-r10a d66d4d5"
  "r10b ef738e0 internal/engine/heldout-r10b 55c13f5"
  "r10c ef738e0 internal/engine/heldout-r10c"
  "r11a de23294 internal/engine/heldout-r11a"
  "r11b de23294 internal/engine/heldout-r11b"
  "r11c de23294 internal/engine/heldout-r11c"
  "r12a e2e31c1 internal/engine/heldout-r12a"
  "r12b e2e31c1 internal/engine/heldout-r12b"
  "r12c e2e31c1 internal/engine/heldout-r12c"
  "r13a ddccfb5 internal/engine/heldout-r13a"
  "r13b ddccfb5 internal/engine/heldout-r13b"
  "r14a 662dcd9 internal/engine/heldout-r14a"
)

for s in "${sets[@]}"; do
  read -r name commit dir from <<<"$s"
  [[ " ${FIRST_SIGHT_SETS:-$name} " == *" $name "* ]] || continue
  rev="$(git rev-parse --short "$commit")"
  bin="${FIRST_SIGHT_BINS:-$tmp}/hiro-$rev"
  if [ ! -x "$bin" ]; then
    if [ ! -d "$wt" ]; then
      git worktree add -q --detach "$wt" "$rev" >&2
      made=1
    fi
    git -C "$wt" checkout -q --detach "$rev"
    (cd "$wt" && go build -o "$bin" ./cmd/hiro)
  fi
  mkdir -p "$tmp/$name"
  git archive "${from:-$rev}" "$dir" | tar -x -C "$tmp/$name" --strip-components="$(tr -cd / <<<"$dir" | wc -c | awk '{print $1+1}')"
  "$bin" diagnose --coverage --json "$tmp/$name" >"$tmp/$name.coverage.json" || true
  n="$(jq '.cases | length' "$tmp/$name/cases.json")"
  for ((i = 0; i < n; i++)); do
    c="$(jq -c ".cases[$i]" "$tmp/$name/cases.json")"
    log="$(jq -r .log <<<"$c")"
    args=(diagnose "$tmp/$name/$log" --engine "$(jq -r .engine <<<"$c")" --json)
    if sig="$(jq -er '.signal // empty' <<<"$c")"; then args+=(--signal "$sig"); fi
    if code="$(jq -er '.exit // empty' <<<"$c")"; then args+=(--exit "$code"); fi
    if [ "$(jq -r '.requires_accelerator // false' <<<"$c")" = true ]; then args+=(--requires-accelerator); fi
    "$bin" "${args[@]}" >"$tmp/out.json" || true
    jq -c --arg set "$name" --arg commit "$rev" --argjson case "$c" \
      --slurpfile cov "$tmp/$name.coverage.json" '
      def accepts($want; $got): ($want // "" | split("|") | map(gsub("^\\s+|\\s+$"; "")) | index($got)) != null;
      .failure as $f | {
        set: $set, commit: $commit, case: $case.log, engine: $case.engine,
        rule: ($f.rule // ""), confidence: ($f.confidence // ""),
        root_cause: ($f.root_cause // ""),
        class: ($f.class // "ready"), want_class: ($case.class // "ready"),
        class_right: (if $case.ready then $f == null else accepts($case.class; $f.class) end),
        phase_right: (if $case.ready then $f == null else accepts($case.phase; $f.phase) end),
        root_cause_right: (if $case.ready then $f == null
          else (($f.root_cause // "") != "" and (($f.root_cause // "") | contains($case.root_cause_contains // ""))) end),
        right: ([$cov[0].wrong[]? | select(.log == $case.log)] | length == 0)
      }' "$tmp/out.json"
  done
done >"$tmp/verdicts.jsonl"
jq -s '{
  about: "Every held-out set'"'"'s verdicts at first sight: the binary of the commit it was scored with, on the set as it was then (first-sight.md says how; first-sight.sh remakes it). right: class, phase, root cause, facts and device all right.",
  verdicts: .
}' "$tmp/verdicts.jsonl"
