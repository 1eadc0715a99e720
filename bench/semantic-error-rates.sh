#!/usr/bin/env bash
# Measured error rates of the semantic gate's paired non-inferiority test
# (issue 23, "Measured error rates"; docs/qualify.md "Verdicts that state
# their uncertainty"): at least 100 A/A trials (production against
# itself, each side another sampled extraction run) and 100 A/B trials
# each at a true F1 drop of the tolerance and of twice the tolerance, on
# corpora/hiro-atlas (48 documents) through the fake engine
# (--chat claims, --drop-claims with a seed per run: the sampling noise and
# the injected drop). Prints P(failed | A/A), P(inconclusive | A/A),
# P(passed | drop = tolerance) and the power at twice the tolerance, each
# with a Clopper-Pearson interval; fails when a goal is missed (false
# alarms <= 5 %, passed at the tolerance <= 5 %, power >= 80 %).
#
# About 5 minutes on 2 cores (some 580 extraction runs of 48 documents).
#
# Usage: bench/semantic-error-rates.sh
#        HIRO_ERROR_TRIALS=200 HIRO_ERROR_NOISE=0.2 bench/semantic-error-rates.sh
set -euo pipefail
cd "$(dirname "$0")/.."
HIRO_ERROR_RATES=1 go test -count=1 -timeout 60m -v -run '^TestSemanticErrorRates$' ./internal/qualify |
  grep -Ev '^(=== RUN|=== PAUSE|=== CONT)'
