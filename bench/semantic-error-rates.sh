#!/usr/bin/env bash
# Measured error rates of the semantic gate's paired non-inferiority test
# (issue 23, "Measured error rates"; docs/qualify.md "Measured error
# rates"): A/A trials (production against itself, each side other sampled
# extraction runs) and A/B trials each at a true F1 drop of the tolerance
# and of twice the tolerance, on corpora/hiro-atlas (48 documents) through
# the fake engine (--chat claims, --drop-claims with a seed per run and the
# request's sampling seed: the sampling noise and the injected drop).
# Calibration runs come first: they find the drops' shares and the
# per-document spread at twice the tolerance, from which the gate's
# replicates are chosen (documents needed at 80 % power / 48, rounded up).
# Prints P(failed | A/A), P(inconclusive | A/A), P(passed | drop =
# tolerance) and the power at twice the tolerance, each with a
# Clopper-Pearson interval, and judges each goal (false alarms <= 5 %,
# passed at the tolerance <= 5 %, power >= 80 %) on that interval: met,
# consistent (the interval holds the goal's limit), or missed (fails).
#
# Runs: about 280 calibration extractions, then 4 x trials x replicates.
# At 2 replicates, 200 trials (1,880 extractions of 48 documents) take
# about half an hour on 2 busy cores.
#
# Usage: bench/semantic-error-rates.sh
#        HIRO_ERROR_TRIALS=400 HIRO_ERROR_PARALLEL=4 bench/semantic-error-rates.sh
#        HIRO_ERROR_REPLICATES=1 bench/semantic-error-rates.sh   (one run per side)
set -euo pipefail
cd "$(dirname "$0")/.."
HIRO_ERROR_RATES=1 HIRO_ERROR_TRIALS="${HIRO_ERROR_TRIALS:-200}" go test -count=1 -timeout 180m -v -run '^TestSemanticErrorRates$' ./internal/qualify |
  grep -Ev '^(=== RUN|=== PAUSE|=== CONT)'
