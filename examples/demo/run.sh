#!/usr/bin/env bash
# The demo: one hiro campaign with both backends real. It installs the
# reference engine if needed, builds hiro, registers the project's models,
# verifies the project's frozen corpus (corpora/hiro-atlas), starts
# production, runs every gate, writes the evidence and a journal entry, and
# builds the journal site. Exit status 0 when the campaign reached a verdict
# (qualified, not qualified or inconclusive: the weaker candidate is
# expected to lose on the semantic gate), else hiro qualify's status (2 bad
# plan, 3 aborted, 4 production down).
set -uo pipefail
source "$(dirname "$0")/../../scripts/example-setup.sh" # sets here and root, defines hiro

# The semantic gate's frozen corpus: the project's own, with gold claims.
hiro corpus verify corpora/hiro-atlas || exit 2

hiro backend stop prod >/dev/null 2>&1 || true
# The demo's own production goes when the demo ends (KEEP_PRODUCTION=1
# keeps it): one line of the demo's, not backend stop's notice that
# nothing will start the active production again.
stop_demo_production() {
  if hiro backend stop prod >/dev/null; then
    echo "demo: stopped the demo's production (prod); KEEP_PRODUCTION=1 keeps it running" >&2
  fi
}
# Production on 11536, the candidate on 11537; a port another program
# holds is replaced by a free one (said on stderr).
example_ports 11536 11537
hiro backend start prod || exit 2

# Ctrl-C: hiro qualify puts production back and exits 3; the demo then
# publishes nothing (a journal entry, once published, stays) and stops.
interrupted=0
trap 'interrupted=1' INT
hiro qualify "$plan"
code=$?
trap - INT
# bash runs no INT trap when the child (hiro qualify) handled SIGINT and
# exited 3 itself, so the decision is hiro's exit status: only a verdict
# (0 qualified, 1 not qualified, 5 inconclusive) is published. 3 (aborted:
# Ctrl-C, SIGTERM, a harness error) and 4 (production not restored) are
# never published: a journal entry, once published, stays. A Ctrl-C is
# told from the other aborts by the campaign's own evidence: its
# termination_reason says "interrupted by SIGINT".
if [ "$code" -eq 3 ]; then
  aborted_dir="$(ls -td "$root"/.hiro/evidence/demo/*/ 2>/dev/null | head -n 1)"
  if [ -n "$aborted_dir" ] && grep -q '"termination_reason": *"interrupted by SIGINT' "${aborted_dir}evidence.json" 2>/dev/null; then
    interrupted=1
  fi
fi
if [ "$interrupted" = 1 ] || [ "$code" -eq 3 ] || [ "$code" -eq 4 ]; then
  why="aborted"
  [ "$interrupted" = 1 ] && why="interrupted"
  echo "demo: $why: hiro qualify exited $code; nothing was added to the journal (the evidence folder stays under .hiro/evidence/demo)" >&2
  if [ "${KEEP_PRODUCTION:-0}" != 1 ]; then stop_demo_production; fi
  [ "$interrupted" = 1 ] && exit 130
  exit "$code"
fi
if [ "$code" -eq 6 ]; then
  echo "demo: hiro qualify exited 6: another hiro holds production or the accelerator (named above); nothing was started: run the demo again when it is done" >&2
  exit 6
fi
case $code in
  0 | 1 | 5) ;;
  *)
    echo "demo: hiro qualify exited $code: no verdict, nothing was added to the journal" >&2
    if [ "${KEEP_PRODUCTION:-0}" != 1 ]; then stop_demo_production; fi
    exit "$code"
    ;;
esac
latest="$(ls -td "$root"/.hiro/evidence/demo/*/ | head -n 1)"
cat "${latest}report.md"
hiro journal add "${latest}evidence.json" --journal "$root/.hiro/journal" &&
  hiro journal build --journal "$root/.hiro/journal" --out "$root/.hiro/journal-site" &&
  echo "journal: $root/.hiro/journal-site/index.html" >&2
if [ "${KEEP_PRODUCTION:-0}" != 1 ]; then
  stop_demo_production
fi
case $code in
  0) echo "demo: hiro qualify exited 0: the candidate is qualified" >&2; exit 0 ;;
  1) echo "demo: hiro qualify exited 1: the candidate is not qualified (expected: the weaker checkpoint loses to production)" >&2; exit 0 ;;
  5) echo "demo: hiro qualify exited 5: inconclusive (the corpus could not tell the candidate from production; the report says how many documents would)" >&2; exit 0 ;;
  *) echo "demo: hiro qualify exited $code" >&2; exit $code ;;
esac
