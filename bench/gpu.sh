#!/usr/bin/env bash
# bench/gpu.sh: decode and update speed on an NVIDIA GPU, in Node, through the `webgpu` npm
# package's Dawn on Vulkan (src/core/engine/webgpu-node.ts finds the system's nvidia_icd.json), at
# SmolLM2-135M's shape (30 layers) and Qwen2.5-0.5B's shape (24 layers), random weights.
#
# For: one call of under 8 minutes on a GPU machine with this working tree and its node_modules
# (nothing is downloaded: the machine may have no network). It prints one markdown table
# (bench/machine.ts): decode tokens/s and its fraction of the memory-bandwidth bound (weights read
# per token x tokens/s over the bandwidth), decode over the backend's own matrix-vector rate,
# update tokens/s and the step's FLOP/s over the backend's own matmul rate.
# Not for: machines without a GPU (it stops at once, exit 2) or correctness (test/webgpu).
#
# Usage: bench/gpu.sh [--bandwidth-gbs X] [--out FILE] [--quick] [--budget-s N]
#   --bandwidth-gbs X  memory bandwidth for the decode bound, GB/s. Default: from nvidia-smi's GPU
#                      name (table below), else 4800 (an H200's HBM3e), said in the table.
#   --out FILE         also write the table to FILE (e.g. bench/results/gpu-webgpu.md)
#   --quick            2 layers per shape, short runs (a smoke test of the script)
#   --budget-s N       stop starting new shapes after N seconds (default 420; the whole call is
#                      also killed at N + 60 s)
#
# Exit codes: 0 the table was printed; 2 no hardware WebGPU adapter (none, or only a software one
# such as SwiftShader): nothing was measured; 3 a prerequisite is missing (node, node_modules);
# 1 the benchmark failed or ran out of time.
set -u

cd "$(dirname "$0")/.." || exit 3
BANDWIDTH=""
SOURCE=""
OUT_FILE=""
QUICK=()
BUDGET=420
while [ $# -gt 0 ]; do
  case "$1" in
    --bandwidth-gbs) BANDWIDTH="${2:-}"; SOURCE="--bandwidth-gbs"; shift 2 ;;
    --out) OUT_FILE="${2:-}"; shift 2 ;;
    --quick) QUICK=(--quick); shift ;;
    --budget-s) BUDGET="${2:-}"; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/gpu.sh: unknown option '$1' (see bench/gpu.sh --help)" >&2; exit 3 ;;
  esac
done
if ! [[ "$BUDGET" =~ ^[0-9]+$ ]]; then echo "bench/gpu.sh: --budget-s needs a whole number of seconds, got '$BUDGET'" >&2; exit 3; fi

if ! command -v node >/dev/null 2>&1; then
  echo "bench/gpu.sh: node is not installed; install Node 20+ and run npm install in the repository first" >&2
  exit 3
fi
if [ ! -d node_modules/webgpu ] || [ ! -d node_modules/tsx ] || [ ! -d node_modules/@tensorflow/tfjs-backend-webgpu ]; then
  echo "bench/gpu.sh: node_modules is incomplete (needs webgpu, tsx, @tensorflow/tfjs-backend-webgpu); run npm install (or carry node_modules) first" >&2
  exit 3
fi

# 1. A hardware WebGPU adapter, or stop.
PROBE="$(node --import tsx bench/machine.ts --probe-adapter 2>/dev/null)"
PROBE_RC=$?
if [ $PROBE_RC -ne 0 ]; then
  WHY="$(printf '%s' "$PROBE" | sed -n 's/.*"why":"\(.*\)".*/\1/p')"
  echo "bench/gpu.sh: no hardware WebGPU adapter found: ${WHY:-the adapter probe failed (${PROBE:-no output})}." >&2
  echo "bench/gpu.sh: this script is for a machine with an NVIDIA GPU and its Vulkan driver (nvidia_icd.json); nothing was measured (exit 2)." >&2
  exit 2
fi
echo "bench/gpu.sh: adapter: $PROBE" >&2

# 2. The bandwidth for the decode bound (GB/s): the flag, else the GPU's name, else an H200's.
if [ -z "$BANDWIDTH" ]; then
  NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
  case "$NAME" in
    *H200*) BANDWIDTH=4800 ;;
    *H100*NVL*) BANDWIDTH=3900 ;;
    *H100*PCIe*) BANDWIDTH=2000 ;;
    *H100*) BANDWIDTH=3350 ;;
    *A100*80GB*PCIe*) BANDWIDTH=1935 ;;
    *A100*80GB*) BANDWIDTH=2039 ;;
    *A100*) BANDWIDTH=1555 ;;
    *L40S*) BANDWIDTH=864 ;;
    *L4*) BANDWIDTH=300 ;;
    *A10*) BANDWIDTH=600 ;;
    *4090*) BANDWIDTH=1008 ;;
    *3090*) BANDWIDTH=936 ;;
    *T4*) BANDWIDTH=320 ;;
  esac
  if [ -n "$BANDWIDTH" ]; then
    SOURCE="nvidia-smi: $NAME, datasheet figure"
  else
    BANDWIDTH=4800
    SOURCE="default: an H200's 4.8 TB/s${NAME:+; GPU \"$NAME\" is not in bench/gpu.sh's table, pass --bandwidth-gbs}"
  fi
fi

# 3. Both shapes on webgpu, one child process each, under one time limit.
OUT_TMP="$(mktemp)"
trap 'rm -f "$OUT_TMP"' EXIT
timeout $((BUDGET + 60)) node --import tsx bench/run.ts machine --backend webgpu --shapes smollm2-135m,qwen2.5-0.5b \
  --bandwidth-gbs "$BANDWIDTH" --bandwidth-source "$SOURCE" --budget-s "$BUDGET" ${QUICK[@]+"${QUICK[@]}"} > "$OUT_TMP"
RC=$?
cat "$OUT_TMP"
if [ $RC -eq 124 ]; then
  echo "bench/gpu.sh: the benchmark ran past $((BUDGET + 60)) s and was stopped; the progress lines above show how far it got (exit 1)" >&2
  exit 1
fi
if [ $RC -ne 0 ] || ! grep -q '^| ' "$OUT_TMP"; then
  echo "bench/gpu.sh: the benchmark failed (exit code $RC); see the messages above (exit 1)" >&2
  exit 1
fi
if [ -n "$OUT_FILE" ]; then cp "$OUT_TMP" "$OUT_FILE" && echo "bench/gpu.sh: table written to $OUT_FILE" >&2; fi
exit 0
