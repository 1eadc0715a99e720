#!/usr/bin/env bash
# Resident memory of hiro while it supervises one engine (issue 2's
# "≤ 30 MB"): `hiro backend start` waits on a fake engine that answers
# health 503 for LOAD seconds; VmRSS of the hiro process is sampled from
# /proc/PID/status every 0.2 s while it waits, and the maximum is printed.
#
#   bench/supervisor-rss.sh [LOAD_SECONDS]     (default 5)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
load="${1:-5}"
tmp="$(mktemp -d)"
trap 'kill -KILL -- "-$(cat "$tmp/pgid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/hiro" ./cmd/hiro && go build -o "$tmp/fake" ./cmd/hiro-fake-engine)
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cat >"$tmp/hiro.toml" <<TOML
state_dir = "state"
[backends.fake]
engine = "llamacpp"
command = "$tmp/fake"
args = ["--port", "$port", "--load-time", "${load}s", "--progress-every", "100ms"]
port = $port
model = "fake-model"
TOML
"$tmp/hiro" --config "$tmp/hiro.toml" backend start fake --json >"$tmp/out.json" 2>"$tmp/err" &
hpid=$!
max=0
samples=0
while kill -0 "$hpid" 2>/dev/null; do
  rss="$(awk '/^VmRSS:/ {print $2}' "/proc/$hpid/status" 2>/dev/null || echo 0)"
  [ -n "$rss" ] || rss=0
  if [ "$rss" -gt "$max" ]; then max="$rss"; fi
  samples=$((samples + 1))
  sleep 0.2
done
wait "$hpid" || true
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("state:", d["state"], "pid:", d.get("pid")); open(sys.argv[2],"w").write(str(d.get("pgid",0)))' "$tmp/out.json" "$tmp/pgid"
"$tmp/hiro" --config "$tmp/hiro.toml" backend stop fake >/dev/null || true
echo "hiro max VmRSS while supervising: $((max / 1024)).$(( (max % 1024) * 10 / 1024 )) MiB ($max kB, $samples samples over ${load}s of loading)"
