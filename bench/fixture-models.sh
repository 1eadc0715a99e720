#!/usr/bin/env bash
# Acceptance numbers of the shipped models on the real Ollama (v0.6.5):
# READY, prompt token counts against fixture.CountTokens, JSON Schema validity
# and verbatim quotes on the project-written sentences, for the strong and the
# weak fixture model. Needs scripts/install-ollama.sh first. A few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -count=1 -run 'TestShippedModelsOnOllama' -v ./internal/fixture/ 2>&1 | grep -E 'project text|ungrounded|does not validate|READY|tokens|^(--- |ok|FAIL|PASS)'
