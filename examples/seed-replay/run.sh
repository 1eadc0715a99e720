#!/usr/bin/env bash
# Replays the seed journal entry's campaign as one hiro command:
# production is the real Ollama serving the project's fixture model, the
# candidate is a vLLM backend acted out by the fake engine replaying the
# three failure logs in logs/ (written by the project in the shape vLLM
# prints them). Expected: exit 1 (not qualified), three failed
# attempts (the first predicted from the seed host's facts, not
# launched), every later gate withheld, production stopped, restored and
# verified, its configuration hash unchanged.
set -uo pipefail
source "$(dirname "$0")/../../scripts/example-setup.sh" # sets here and root, defines hiro

# The plan's semantic gate names the project's own frozen corpus
# (corpora/hiro-mini, shipped): 'hiro qualify' checks it verifies before
# anything is stopped.

# Production on 11534, the replayed vLLM on 18001: a port another program
# holds is replaced by a free one (said on stderr), in a copy of hiro.toml
# and plan.toml (scripts/example-ports.sh).
example_ports 11534 18001

# Asked first, before this script starts or stops anything: can the
# campaign start now? --check exits 6 when another hiro (the demo's
# campaign, say) holds production or the accelerator, and names it.
hiro qualify "$plan" --check --host-facts "$here/seed-host.json" >/dev/null
code=$?
if [ "$code" -eq 6 ]; then
  echo "seed replay: not started (exit 6), nothing of it started or stopped" >&2
  exit 6
elif [ "$code" -ne 0 ]; then
  echo "seed replay: hiro qualify --check exited $code (named above); nothing was started" >&2
  exit "$code"
fi

# Production must be up before the campaign, as it would be on a real box.
hiro backend stop prod >/dev/null 2>&1 || true
hiro backend start prod || exit 2

# The preflight predicts each attempt against the seed host's recorded
# facts (WSL2 kernel, RTX 5090, driver 576.88), not this machine's: the
# first attempt (the V2 runner, which needs UVA) is predicted to fail and
# is not launched; production is stopped only for the attempts that could run.
hiro qualify "$plan" --host-facts "$here/seed-host.json"
code=$?
stop_production() {
  # The script's own production: one line of its own, not backend stop's
  # notice that nothing will start the active production again.
  if [ "${KEEP_PRODUCTION:-0}" != 1 ] && hiro backend stop prod >/dev/null; then
    echo "seed replay: stopped the replay's production (prod); KEEP_PRODUCTION=1 keeps it running" >&2
  fi
}
if [ "$code" -eq 6 ]; then
  # Busy: another hiro took production or the accelerator since the
  # check (named above): the campaign did not start and wrote no evidence.
  echo "seed replay: hiro qualify exited 6: not started, no evidence; stopping the production this script started" >&2
  stop_production
  exit 6
fi
case $code in
  1) echo "hiro qualify exited 1: not qualified, as in the seed" >&2 ;;
  3) echo "hiro qualify exited 3: aborted (a harness error or an interrupt, named above; production restored), no verdict; the seed's was 1 (not qualified)" >&2 ;;
  *) echo "hiro qualify exited $code (the seed's was 1: not qualified; see internal/exitcode)" >&2 ;;
esac
latest="$(ls -td "$root"/.hiro/evidence/seed-replay/*/ 2>/dev/null | head -n 1)"
if [ -n "$latest" ] && [ -f "${latest}report.md" ]; then
  echo "--- report: ${latest}report.md" >&2
  cat "${latest}report.md"
else
  echo "seed replay: no evidence folder under $root/.hiro/evidence/seed-replay: the campaign stopped before it wrote one (see above)" >&2
fi
hiro backend status prod
stop_production
exit $code
