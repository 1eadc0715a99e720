#!/usr/bin/env bash
# The activation walk-through of docs/activation.md, run as written: a
# campaign that qualifies (production's model on a second Ollama), then
# 'hiro activate --check', 'hiro activate', the backends' state, and
# 'hiro rollback'. It installs the reference engine if needed, builds hiro
# and registers the project's models first, and says what it does at each
# step. Exit 0 when every step did what the walk-through says.
#
# The switch writes its records to the private state folder (see
# docs/reliability.md "Where hiro keeps its state"): set HIRO_STATE_HOME to
# a folder of your own to keep this trial apart from a real production.
set -uo pipefail
source "$(dirname "$0")/../../scripts/example-setup.sh" # sets here and root, defines hiro
step() { echo "activate-example: $*" >&2; }

step "starting production (prod)"
hiro backend stop prod >/dev/null 2>&1 || true
hiro backend stop twin >/dev/null 2>&1 || true
# The example's own backends go when it ends, however it ends (an early
# exit included; KEEP_PRODUCTION=1 keeps production): one line of its
# own, not backend stop's notice that nothing will start the active
# production again (as the demo and seed replay).
stop_example_backends() {
  hiro backend stop twin >/dev/null 2>&1 || true
  if [ "${KEEP_PRODUCTION:-0}" != 1 ] && hiro backend stop prod >/dev/null; then
    step "stopped the example's production (prod); KEEP_PRODUCTION=1 keeps it running"
  fi
}
trap stop_example_backends EXIT
# prod on 11538, twin on 11539, hiro serve's router on 8410: a port
# another program holds is replaced by a free one (said on stderr), in a
# copy of hiro.toml and plan.toml (scripts/example-ports.sh).
example_ports 11538 11539 8410
hiro backend start prod || exit 2

step "qualifying twin (every gate; a few minutes on 2 cores)"
hiro qualify "$plan"
code=$?
if [ "$code" -eq 6 ]; then
  step "hiro qualify exited 6: another hiro holds production or the accelerator (named above); run this again when it is done"
  exit 6
fi
# Only exit 1 is a verdict against the candidate: 3 is aborted (a harness
# error or an interrupt, production restored), 4 production not restored,
# 5 inconclusive, 2 bad usage (internal/exitcode).
case $code in
  0) ;;
  1) step "hiro qualify exited 1: the candidate did not qualify, nothing to activate"; exit 1 ;;
  3) step "hiro qualify exited 3: aborted (a harness error or an interrupt, named above; production restored), no verdict, nothing to activate"; exit 3 ;;
  4) step "hiro qualify exited 4: aborted and production was not restored (named above), nothing to activate"; exit 4 ;;
  5) step "hiro qualify exited 5: inconclusive (the corpus could not tell twin from production), nothing to activate"; exit 1 ;;
  *) step "hiro qualify exited $code: no verdict, nothing to activate"; exit "$code" ;;
esac
evidence="$(ls -td "$root"/.hiro/evidence/activate/*/ | head -n 1)"

step "hiro activate ${evidence} --check (every check, nothing touched)"
hiro activate "$evidence" --check || exit 1
step "hiro activate ${evidence} (twin becomes production)"
hiro activate "$evidence" || exit 1
hiro backend status
step "hiro rollback (back to prod)"
hiro rollback || exit 1
hiro backend status
step "done: qualified, activated, rolled back"
