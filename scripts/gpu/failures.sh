#!/usr/bin/env bash
# Provokes real GPU failures on a CUDA machine and keeps, for each, the
# engine's log, nvidia-smi's view and what hiro said. Called by run.sh after
# the CUDA backend is built (ollama and hiro on PATH, models registered).
#
#   scripts/gpu/failures.sh OUTDIR
#
# Cases (each bounded):
#   busy      another process holds most of the GPU memory: the prereq gate
#             of examples/gpu/plan-busy.toml, and the candidate started anyway
#   fallback  with that memory held, a model whose context (num_ctx) and full
#             GPU offload (num_gpu 999) need more than is left: Ollama runs it
#             on the CPU
#   oom       the same model, the memory taken by another process right after
#             Ollama's estimate: the runner's CUDA allocation fails
#   hostmem   a 40M-token context: more KV cache than the host has memory
#   hidden    the candidate with CUDA_VISIBLE_DEVICES=-1 (GPU hidden)
#   noindex   the candidate with CUDA_VISIBLE_DEVICES=7 (no such GPU)
#   kill      the runner (tiny random model, which never stops by itself)
#             killed with SIGKILL during a long generation, and
#             then the whole server killed during another one
set -uo pipefail
out="$1"; mkdir -p "$out"
h="hiro --config examples/gpu/hiro.toml"
state=.hiro/gpu
log() { echo "[$(date -u +%H:%M:%S)] failures: $*" >&2; }
lastlog() { ls -t "$state"/logs/"$1"-*.log 2>/dev/null | head -n1; }
startcase() { # NAME PROFILE: hiro backend start --json, its log, then stop
  local name="$1" prof="$2"
  timeout 180 $h backend start "$prof" --json >"$out/$name.start.json" 2>"$out/$name.start.err"
  echo "exit $?" >>"$out/$name.start.err"
  local l; l="$(lastlog "$prof")"; [ -n "$l" ] && cp "$l" "$out/$name.log"
  $h backend stop "$prof" >"$out/$name.stop.txt" 2>&1
}

# --- a process holding GPU memory ---
holdfree_mib="${HOLD_LEAVE_MIB:-1536}"
log "holder: leaving about $holdfree_mib MiB free"
python3 - "$holdfree_mib" >"$out/holder.txt" 2>&1 <<'PY' &
import sys, time, torch
leave = int(sys.argv[1]) << 20
free, total = torch.cuda.mem_get_info()
n = max(0, free - leave)
x = torch.empty(n, dtype=torch.uint8, device="cuda")
free2, _ = torch.cuda.mem_get_info()
print(f"holder pid {__import__('os').getpid()} holds {n>>20} MiB; free before {free>>20} MiB after {free2>>20} MiB", flush=True)
time.sleep(240)
PY
holder=$!
for _ in $(seq 120); do grep -q holds "$out/holder.txt" 2>/dev/null && break; sleep 0.5; done
cat "$out/holder.txt" >&2
nvidia-smi >"$out/busy.nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv,noheader,nounits >"$out/busy.query-gpu.csv" 2>&1
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits >"$out/busy.query-apps.csv" 2>&1
$h doctor --json >"$out/busy.doctor.json" 2>&1

log "busy: prereq gate"
timeout 120 $h qualify examples/gpu/plan-busy.toml >"$out/busy.qualify.out" 2>&1
echo "exit $?" >>"$out/busy.qualify.out"
ev="$(ls -td .hiro/evidence/gpu-busy/*/ 2>/dev/null | head -n1)"; [ -n "$ev" ] && cp -r "$ev" "$out/busy.campaign"
log "busy: candidate started anyway"
startcase busy candidate-weak

log "fallback: a model too large for the memory left, started while it is held"
mkdir -p "$out/tmp"
cat >"$out/tmp/Modelfile" <<'MF'
FROM hiro-fixture-strong
PARAMETER num_ctx 2000000
PARAMETER num_gpu 999
MF
OLLAMA_HOST=127.0.0.1:11551 OLLAMA_MODELS="$PWD/.hiro/ollama-models" setsid ollama serve >"$out/tmp/create-serve.log" 2>&1 &
cs=$!
for _ in $(seq 100); do curl -fsS http://127.0.0.1:11551/ >/dev/null 2>&1 && break; sleep 0.1; done
OLLAMA_HOST=127.0.0.1:11551 ollama create hiro-fixture-bigctx -f "$out/tmp/Modelfile" >"$out/tmp/create.log" 2>&1
# A 40M-token context: about 320 GiB of KV cache, more than the host's memory.
sed -e 's/num_ctx 2000000/num_ctx 40000000/' "$out/tmp/Modelfile" >"$out/tmp/Modelfile.huge"
OLLAMA_HOST=127.0.0.1:11551 ollama create hiro-fixture-hugectx -f "$out/tmp/Modelfile.huge" >>"$out/tmp/create.log" 2>&1
kill -TERM -- -$cs 2>/dev/null; sleep 1; kill -KILL -- -$cs 2>/dev/null
startcase fallback cand-bigctx

kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
sleep 2
nvidia-smi >"$out/after-holder.nvidia-smi.txt" 2>&1

log "oom: the memory is taken between Ollama's estimate and the runner's allocation"
# Ollama sizes the offload from the free memory it reads before starting its
# runner; a process that takes the memory right after that line makes the
# runner's own CUDA allocation fail.
before="$(ls "$state"/logs/ 2>/dev/null | tr '\n' ' ')"
python3 - "$state/logs" "$before" >"$out/oom.holder.txt" 2>&1 <<'PY2' &
# CUDA is initialised first, so that the allocation itself takes
# milliseconds once the new log says the runner is being started.
import os, sys, time, torch
logs, before = sys.argv[1], set(sys.argv[2].split())
torch.empty(1, device="cuda")
print("holder ready", flush=True)
deadline = time.time() + 120
while time.time() < deadline:
    new = [f for f in os.listdir(logs) if f.startswith("cand-bigctx-") and f not in before]
    if new and "starting llama server" in open(os.path.join(logs, new[0]), errors="replace").read():
        break
    time.sleep(0.002)
free, _ = torch.cuda.mem_get_info()
x = torch.empty(free - (256 << 20), dtype=torch.uint8, device="cuda")
print("holder took", (free >> 20) - 256, "MiB of", free >> 20, "free", flush=True)
time.sleep(60)
PY2
racer=$!
for _ in $(seq 200); do grep -q 'holder ready' "$out/oom.holder.txt" 2>/dev/null && break; sleep 0.1; done
startcase oom cand-bigctx
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits >"$out/oom.query-apps.csv" 2>&1
kill "$racer" 2>/dev/null; wait "$racer" 2>/dev/null
sleep 1

log "hostmem: a context larger than the host's memory"
startcase hostmem cand-hugectx

log "hidden: CUDA_VISIBLE_DEVICES=-1"
startcase hidden cand-hidden
log "noindex: CUDA_VISIBLE_DEVICES=7"
startcase noindex cand-noindex

# queued_generations OUT: 48 generations of the tiny model at once, in the
# background (its pid in $client); the runner serves them one after another,
# so it is generating when it is killed. Each request's result goes to OUT.
queued_generations() {
  python3 - "$1" <<'PY' &
import json, sys, time, threading, urllib.request
# Many requests at once: the runner serves them one after another, so it is
# generating when it is killed.
res = []
def one(i):
    body = {"model": "hiro-tiny", "stream": False, "prompt": "Write a long story number %d." % i,
            "options": {"num_predict": 2000, "num_ctx": 4096}}
    t = time.time()
    try:
        r = json.load(urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:11553/api/generate", json.dumps(body).encode(), {"Content-Type": "application/json"}), timeout=120))
        res.append({"i": i, "ok": True, "seconds": time.time() - t, "eval_count": r.get("eval_count"), "done_reason": r.get("done_reason")})
    except Exception as e:
        body = getattr(e, "read", lambda: b"")().decode(errors="replace")
        res.append({"i": i, "ok": False, "seconds": time.time() - t, "error": repr(e), "body": body})
ts = [threading.Thread(target=one, args=(i,)) for i in range(48)]
[t.start() for t in ts]; [t.join() for t in ts]
json.dump(sorted(res, key=lambda r: r["i"]), open(sys.argv[1], "w"), indent=1)
PY
  client=$!
}

log "kill: runner SIGKILLed during a long generation"
timeout 120 $h backend start cand-tiny --json >"$out/kill.start.json" 2>"$out/kill.start.err"
queued_generations "$out/kill-runner.client.json"
sleep 1.5
runner="$(pgrep -f 'ollama runner' | head -n1)"
echo "runner pid ${runner:-none}" >"$out/kill-runner.txt"
[ -n "$runner" ] && kill -KILL "$runner"
wait "$client"
sleep 1
# The next request after the runner's death: Ollama starts a new runner.
curl -sS -m 30 http://127.0.0.1:11553/api/generate -d '{"model":"hiro-tiny","prompt":"again","stream":false,"options":{"num_predict":8}}' >"$out/kill-runner.next.json" 2>&1
l="$(lastlog cand-tiny)"; [ -n "$l" ] && cp "$l" "$out/kill-runner.log"
$h backend status >"$out/kill-runner.status.txt" 2>&1

log "kill: the whole server SIGKILLed during a long generation"
queued_generations "$out/kill-server.client.json"
sleep 1.5
server="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("pid",""))' "$state/backends/cand-tiny.json" 2>/dev/null)"
echo "server pid ${server:-none}" >"$out/kill-server.txt"
[ -n "$server" ] && kill -KILL -- "-$server" 2>/dev/null
wait "$client"
sleep 1
l="$(lastlog cand-tiny)"; [ -n "$l" ] && cp "$l" "$out/kill-server.log"
$h backend status >"$out/kill-server.status.txt" 2>&1
$h backend stop cand-tiny >/dev/null 2>&1
rm -rf "$out/tmp"
log "done"
