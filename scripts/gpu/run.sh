#!/usr/bin/env bash
# Runs on a CUDA machine (no Go, no network needed), from the repository
# root, with the files of scripts/gpu/prepare.sh in CARRY (default .gpu):
#   1. builds Ollama v0.6.5's CUDA backend (ggml-cuda, for the GPU's own
#      architecture) from the carried module sources with CMake + Ninja, and
#      lays it out where Ollama loads it (../lib/ollama/cuda_v12 from the
#      binary, with cuBLAS, cuBLASLt and the CUDA runtime);
#   2. records the host (nvidia-smi, hiro doctor);
#   3. runs the demo campaign with production and candidate on the GPU
#      (examples/gpu), then asks Ollama's native API for its own tokens/s on
#      the same requests;
#   4. provokes real GPU failures and keeps each engine log with what hiro
#      said (scripts/gpu/failures.sh).
# Everything is written under OUT (default ./gpu-out). Each step is bounded.
#
#   scripts/gpu/run.sh [CARRY] [OUT]
set -uo pipefail
root="$(pwd)"
carry="$(cd "${1:-.gpu}" && pwd)"
out="${2:-${OUT:-$root/gpu-out}}"
mkdir -p "$out"
w=/tmp/hiro-gpu; mkdir -p "$w/bin" "$w/src"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/steps.log" >&2; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# --- host ---
log "host"
{ uname -a; nproc; free -g; nvidia-smi; nvcc --version; cmake --version; ninja --version; } >"$out/host.txt" 2>&1
nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv,noheader,nounits >"$out/nvidia-smi-query-gpu.csv" 2>&1
nvidia-smi >"$out/nvidia-smi.txt" 2>&1

# Driver libraries (libcuda, libnvidia-ml) must be findable by Ollama.
drv="$(dirname "$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')" 2>/dev/null)"
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu; do
  [ -e "$d/libcuda.so.1" ] && { drv="$d"; break; }
done
export LD_LIBRARY_PATH="${drv:+$drv:}${LD_LIBRARY_PATH:-}"
log "driver libraries in: ${drv:-not found}"

# --- binaries ---
[ -x "$w/bin/ollama" ] || gunzip -c "$carry/ollama.gz" >"$w/bin/ollama"
gunzip -c "$carry/hiro.gz" >"$w/bin/hiro"
chmod +x "$w/bin/ollama" "$w/bin/hiro"
export PATH="$w/bin:$PATH"

# --- CUDA backend ---
# Ollama on Linux loads its backends from ../lib/ollama beside its binary.
lib="$w/lib/ollama"
if [ ! -e "$lib/cuda_v12/libggml-cuda.so" ]; then
  log "building ggml-cuda"
  tar -C "$w/src" -xJf "$carry/ggml-src.tar.xz"
  arch="${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d .)}"
  t0=$(date +%s)
  (cmake -S "$w/src" -B "$w/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${arch:-90}" -DGGML_CCACHE=OFF &&
    cmake --build "$w/build" --target ggml-cuda -j "$(nproc)") >"$out/cuda-build.log" 2>&1
  rc=$?
  log "ggml-cuda build exit $rc in $(( $(date +%s) - t0 )) s (arch sm_${arch})"
  [ $rc = 0 ] || { tail -40 "$out/cuda-build.log"; exit 1; }
  mkdir -p "$lib/cuda_v12"
  cp -a "$w/build/lib/ollama/"libggml-cuda.so "$lib/cuda_v12/"
  cp -a "$w/build/lib/ollama/"libggml-base.so "$lib/" 2>/dev/null || true
  cudalib="$(dirname "$(command -v nvcc)")/../lib64"
  for so in libcublas.so libcublasLt.so libcudart.so; do
    for f in $(ls "$cudalib"/$so* /usr/local/cuda/lib64/$so* 2>/dev/null); do cp -a "$f" "$lib/cuda_v12/" 2>/dev/null || true; done
  done
  ldd "$lib/cuda_v12/libggml-cuda.so" >"$out/ldd-ggml-cuda.txt" 2>&1
  ls -la "$lib" "$lib/cuda_v12" >"$out/lib-layout.txt" 2>&1
fi

# --- models ---
log "registering the project's models"
HIRO_OLLAMA="$w/bin/ollama" ./scripts/prepare-models.sh "$root/.hiro/ollama-models" >"$out/prepare-models.log" 2>&1 || { log "prepare-models failed"; tail -20 "$out/prepare-models.log"; }

# --- doctor ---
log "hiro doctor"
hiro --config examples/gpu/hiro.toml doctor --json >"$out/doctor.json" 2>"$out/doctor.err"

# --- the demo campaign on the GPU ---
log "campaign"
export HIRO_LEASE_DIR="$w/leases"; mkdir -p "$HIRO_LEASE_DIR"; chmod 700 "$HIRO_LEASE_DIR"
h="hiro --config examples/gpu/hiro.toml"
$h backend stop prod >/dev/null 2>&1
$h backend start prod --json >"$out/prod-start.json" 2>"$out/prod-start.err"
t0=$(date +%s)
timeout 300 $h qualify examples/gpu/plan.toml >"$out/qualify.out" 2>"$out/qualify.err"
echo "exit $? after $(( $(date +%s) - t0 )) s" >>"$out/qualify.out"
ev="$(ls -td "$root"/.hiro/evidence/gpu/*/ 2>/dev/null | head -n1)"
[ -n "$ev" ] && cp -r "$ev" "$out/campaign"
# The engine's own figures for the same requests (Ollama's native API
# reports eval_count and eval_duration in ns).
python3 - "$out/native-tokens.json" <<'PY' 2>>"$out/native.err"
import json, sys, time, urllib.request
url = "http://127.0.0.1:11546/api/chat"
rows = []
for i in range(20):
    body = {"model": "hiro-fixture-strong", "stream": False,
            "messages": [{"role": "user", "content": "Reply with the single word READY."}],
            "options": {"num_predict": 64}}
    t = time.time()
    r = json.load(urllib.request.urlopen(urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"}), timeout=60))
    rows.append({"wall_ms": (time.time() - t) * 1000, "eval_count": r.get("eval_count"), "eval_duration_ns": r.get("eval_duration"),
                 "prompt_eval_count": r.get("prompt_eval_count"), "prompt_eval_duration_ns": r.get("prompt_eval_duration"),
                 "load_duration_ns": r.get("load_duration"), "total_duration_ns": r.get("total_duration")})
json.dump(rows, open(sys.argv[1], "w"), indent=1)
PY
cp "$root"/.hiro/gpu/logs/prod-*.log "$out/" 2>/dev/null
$h backend stop prod >/dev/null 2>&1

# --- real failures ---
log "failures"
bash scripts/gpu/failures.sh "$out/failures" 2>&1 | tee -a "$out/steps.log" | tail -5
log "done"
# One archive of everything, for machines that return few files.
tar -czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")" 2>/dev/null
