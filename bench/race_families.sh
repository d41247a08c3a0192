#!/usr/bin/env bash
# bench/race_families.sh — squeeze vs llama.cpp (and ik_llama.cpp) on the families' shapes:
# random-weight files of real shapes at Q4_K_M, the engines back to back on the same file.
#
# usage: bench/race_families.sh LLAMA_CPP_BIN_DIR [IK_LLAMA_BIN_DIR|-] [repetitions]
#   LLAMA_CPP_BIN_DIR holds llama-bench and llama-quantize built OUTSIDE this repository from
#   llama.cpp's sources (without it the race is skipped, saying so); IK_LLAMA_BIN_DIR the
#   same for ik_llama.cpp's llama-bench ("-" or absent: that column is skipped, saying so).
# Models (build/race/, made once): Llama 3.2 1B (tied embeddings, Llama 3 RoPE divisors) and
# Qwen3-4B (QK-norm, tied), `squeeze make-model --config llama3.2-1b|qwen3-4b --type F16`
# quantized to Q4_K_M by llama-quantize (llama.cpp's own mix, which squeeze then reads).
# Tests: pp512, tg128, tg32 at depth 4096 (RACE_DEPTH; 0 skips it), f16 KV, 2 threads; each engine runs
# each test in two rounds with the order of engines reversed in the second; the ratio is of
# the mean tokens/s. llama.cpp and ik_llama.cpp run with flash attention on (their
# fastest CPU setting here); their builds and flags are printed with the table.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LLAMA_BIN="${1:-}"
IK_BIN="${2:--}"
REPS="${3:-1}"
DEPTH="${RACE_DEPTH:-4096}"
SQ="$ROOT/build/release/tools/squeeze"
source "$ROOT/bench/race_lib.sh"
race_check_engines race_families
OUT="$ROOT/build/race"
mkdir -p "$OUT"
MODELS=()
for cfg in llama3.2-1b qwen3-4b; do
  q4="$OUT/$cfg-q4_k_m.gguf"
  if [ ! -f "$q4" ]; then
    "$SQ" make-model --config "$cfg" --type F16 --seed 1 -o "$OUT/$cfg-f16.gguf" >&2
    "$LLAMA_BIN/llama-quantize" "$OUT/$cfg-f16.gguf" "$q4" Q4_K_M 2 >/dev/null 2>&1
    rm -f "$OUT/$cfg-f16.gguf"
  fi
  MODELS+=("$q4")
done
results="$OUT/results-families.csv"
echo "engine,model,test,t_per_s" > "$results"

race_rounds "$results" "${MODELS[@]}"
echo "squeeze: squeeze bench -t 2 -r $REPS --kv f16; llama.cpp / ik_llama.cpp: llama-bench -t 2 -r $REPS -fa 1 (f16 KV)"
race_table "$results"
