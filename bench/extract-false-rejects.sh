#!/usr/bin/env bash
# Measurement for issue 11 item 6 (the document is data): the share of
# legitimate gold claims that the injection defence of package extract
# would reject, for the claim itself (malformed_claim, addresses_model) or
# for the sentence it comes from (addresses_model).
#
# Corpora: corpora/hiro-mini always; Factcheck-GPT from
# ../shared/corpora/factcheck-gpt when present (skipped with a message
# otherwise). The test fails when the rate on Factcheck-GPT exceeds 1% or any
# hiro-mini gold claim is rejected.
#
# Result at the time of writing: hiro-mini 0 of 32, Factcheck-GPT 0 of 678
# (2 of its 311 response sentences are taken for text addressing the model,
# neither carrying a gold claim: e.g. "As an AI language model, I do not have
# access to current information ...").
# After issue 25 item 7 (orders judged by the sentence's form): the same,
# 0 of 32 and 0 of 678, 2 of 311 sentences (1 December 2026). Rejecting
# every imperative, procedure steps included, would reject 9 of 678 (1.3%).
# After issue 26 F8 (a claim holding a line break, a tab or a label of the
# prompt layout, "Context after:", is rejected; falseReject checks both):
# 0 of 32 and 0 of 678 again (2 December 2026).
# Factcheck-GPT is read from $HIRO_FACTCHECK_GPT, ../shared or /work/shared.
#
# Usage: bench/extract-false-rejects.sh   (from the repository root or not)
set -euo pipefail
cd "$(dirname "$0")/.."
go test -count=1 -v -run 'TestFalseRejectRateOnGoldClaims' ./internal/extract | grep -E 'false-reject rate|not measured|false reject|^(ok|FAIL|---)'
