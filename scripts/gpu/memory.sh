#!/usr/bin/env bash
# Measures the GPU memory real CUDA Ollama v0.6.5 takes for random-weight
# GGUFs of real model shapes (hiro-fixture shape: llama-3.2-1b f16,
# llama-3.2-3b q8_0, llama-3.1-8b q8_0) at several contexts and parallel
# slots, so hiro's memory estimate (internal/preflight) can be compared
# with what happened (bench/preflight). Runs on a CUDA machine without Go,
# from the repository root, with scripts/gpu/prepare.sh's files in CARRY
# (default .gpu; it needs hiro-fixture.gz there too).
#
#   scripts/gpu/memory.sh [CARRY] [OUT]
#
# OUT gets: results.csv (one row per load: shape, type, num_ctx, parallel,
# the runner's memory from nvidia-smi per process, the device's used
# memory, Ollama's offload line), host.txt, and logs.tgz (each server's
# log). Each step is bounded.
set -uo pipefail
root="$(pwd)"
carry="$(cd "${1:-.gpu}" && pwd)"
out="${2:-${OUT:-$root/gpu-out}}"
mkdir -p "$out/logs"
w=/tmp/hiro-mem; mkdir -p "$w/bin" "$w/src" "$w/models"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/steps.log" >&2; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

{ uname -a; nproc; free -g; nvidia-smi; nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version,compute_cap --format=csv; } >"$out/host.txt" 2>&1
drv=""
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu; do
  [ -e "$d/libcuda.so.1" ] && { drv="$d"; break; }
done
export LD_LIBRARY_PATH="${drv:+$drv:}${LD_LIBRARY_PATH:-}"
gunzip -c "$carry/ollama.gz" >"$w/bin/ollama"
gunzip -c "$carry/hiro-fixture.gz" >"$w/bin/hiro-fixture"
chmod +x "$w/bin/"*
export PATH="$w/bin:$PATH"

# The CUDA backend, as scripts/gpu/run.sh builds it.
lib="$w/lib/ollama"
log "building ggml-cuda"
tar -C "$w/src" -xJf "$carry/ggml-src.tar.xz"
(cmake -S "$w/src" -B "$w/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CCACHE=OFF &&
  cmake --build "$w/build" --target ggml-cuda -j "$(nproc)") >"$out/logs/cuda-build.log" 2>&1 || { log "ggml-cuda build failed"; tail -30 "$out/logs/cuda-build.log"; exit 1; }
mkdir -p "$lib/cuda_v12"
cp -a "$w/build/lib/ollama/"libggml-cuda.so "$lib/cuda_v12/"
cp -a "$w/build/lib/ollama/"libggml-base.so "$lib/" 2>/dev/null || true
cudalib="$(dirname "$(command -v nvcc)")/../lib64"
for so in libcublas.so libcublasLt.so libcudart.so; do
  for f in $(ls "$cudalib"/$so* /usr/local/cuda/lib64/$so* 2>/dev/null); do cp -a "$f" "$lib/cuda_v12/" 2>/dev/null || true; done
done
log "ggml-cuda built"

# The models: random weights of real shapes.
shapes="llama-3.2-1b:f16 llama-3.2-3b:q8_0 llama-3.1-8b:q8_0"
for st in $shapes; do
  s="${st%%:*}" t="${st##*:}"
  hiro-fixture shape --shape "$s" --type "$t" --out "$w/$s-$t.gguf" >>"$out/steps.log" 2>&1 &
done
wait
log "GGUFs written"
port=11601
serve() { # PARALLEL: an ollama serve with that many slots; its pid in $srv
  OLLAMA_HOST=127.0.0.1:$port OLLAMA_MODELS="$w/models" OLLAMA_KEEP_ALIVE=-1 OLLAMA_NUM_PARALLEL="$1" \
    OLLAMA_MAX_LOADED_MODELS=1 setsid ollama serve >>"$out/logs/serve-p$1.log" 2>&1 &
  srv=$!
  for _ in $(seq 100); do curl -fsS http://127.0.0.1:$port/ >/dev/null 2>&1 && return 0; sleep 0.1; done
}
stopserve() { kill -TERM -- -"$srv" 2>/dev/null; sleep 2; kill -KILL -- -"$srv" 2>/dev/null; wait "$srv" 2>/dev/null; }
serve 1
for st in $shapes; do
  s="${st%%:*}" t="${st##*:}"
  printf 'FROM %s\nTEMPLATE "{{ .Prompt }}"\n' "$w/$s-$t.gguf" >"$w/Modelfile-$s"
  OLLAMA_HOST=127.0.0.1:$port timeout 120 ollama create "$s" -f "$w/Modelfile-$s" >>"$out/steps.log" 2>&1 || log "create $s failed"
  rm -f "$w/$s-$t.gguf"
done
stopserve
log "models registered"

echo "shape,type,num_ctx,parallel,runner_mib,device_used_mib,load_ok,seconds" >"$out/results.csv"
measure() { # SHAPE TYPE CTX PARALLEL
  local t0=$(date +%s.%N) ok=1
  curl -fsS -m 120 http://127.0.0.1:$port/api/generate -d "{\"model\":\"$1\",\"prompt\":\"hello\",\"stream\":false,\"options\":{\"num_predict\":4,\"num_ctx\":$3}}" >"$out/logs/gen-$1-c$3-p$4.json" 2>&1 || ok=0
  sleep 1
  local apps used
  apps="$(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits 2>&1)"
  used="$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -n1)"
  echo "$1 c$3 p$4: $apps" >>"$out/logs/apps.txt"
  local runner; runner="$(echo "$apps" | awk -F', ' '{s+=$3} END{print s+0}')"
  echo "$1,$2,$3,$4,$runner,$used,$ok,$(awk "BEGIN{print $(date +%s.%N) - $t0}")" >>"$out/results.csv"
  # unload, and wait until the memory is given back
  curl -fsS -m 30 http://127.0.0.1:$port/api/generate -d "{\"model\":\"$1\",\"keep_alive\":0}" >/dev/null 2>&1
  for _ in $(seq 60); do [ -z "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader)" ] && break; sleep 0.5; done
}
for p in 1 4; do
  serve $p
  for st in $shapes; do
    s="${st%%:*}" t="${st##*:}"
    for c in 2048 8192 32768; do
      log "measure $s $t ctx $c parallel $p"
      measure "$s" "$t" "$c" "$p"
    done
  done
  stopserve
done
# Long contexts: 8B at its trained 131072 tokens, one slot.
serve 1
log "measure llama-3.1-8b ctx 131072 parallel 1"
measure llama-3.1-8b q8_0 131072 1
# A busy device: another process leaves about 12 GiB, less than the 8B
# model at 32768 tokens needs: Ollama offloads only part of the layers.
python3 - <<'PY' >"$out/logs/holder.txt" 2>&1 &
import time, torch
free, total = torch.cuda.mem_get_info()
x = torch.empty(free - (12 << 30), dtype=torch.uint8, device="cuda")
print("holder holds", (free - (12 << 30)) >> 20, "MiB; free before", free >> 20, flush=True)
time.sleep(90)
PY
holder=$!
for _ in $(seq 120); do grep -q holds "$out/logs/holder.txt" 2>/dev/null && break; sleep 0.5; done
nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits >>"$out/logs/holder.txt"
log "measure llama-3.1-8b ctx 32768 parallel 1, 12 GiB free"
t0=$(date +%s)
curl -fsS -m 120 http://127.0.0.1:$port/api/generate -d '{"model":"llama-3.1-8b","prompt":"hello","stream":false,"options":{"num_predict":4,"num_ctx":32768}}' >"$out/logs/gen-busy.json" 2>&1
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits >>"$out/logs/apps.txt" 2>&1
kill "$holder" 2>/dev/null
stopserve
log "done"
tar -czf "$out/logs.tgz" -C "$out" logs && rm -rf "$out/logs"
