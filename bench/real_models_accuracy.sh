#!/usr/bin/env bash
# bench/real_models_accuracy.sh — squeeze vs llama.cpp on the real models, by
# llama-perplexity's method and its KL-divergence statistics (docs/real-models.md).
#
# usage: bench/real_models_accuracy.sh LLAMA_CPP_BUILD_BIN_DIR [chunks]
#   LLAMA_CPP_BUILD_BIN_DIR holds llama-perplexity built OUTSIDE this repository from
#   llama.cpp's own sources; without it the comparison is skipped, saying so.
#   chunks: chunks of 512 tokens (default 16: 4080 scored positions).
# Text: Debian's GPL-3, GPL-2 and Apache-2.0 license texts (base-files), concatenated.
# For each model of scripts/get-models, with 2 threads, it runs:
#   1. llama-perplexity (defaults: f16 KV, flash attention auto) saving its log-probs;
#   2. squeeze perplexity against them: squeeze vs llama.cpp;
#   3. squeeze perplexity --kv f32 saving its log-probs: the f32 path, equal to a float64
#      forward to ~1e-6 (tests/python/test_model_reference.py), "exact" below;
#   4. llama-perplexity against the exact log-probs: llama.cpp vs exact;
#   5. squeeze perplexity (default f16 KV) against them: squeeze vs exact;
#   6. llama-perplexity -fa off against its own flash-attention log-probs (1.): how far
#      llama.cpp's two attention paths are apart.
# Logs and summaries land in build/bench-results/real-models/ (the log-probability files
# are large — 2 GB per Gemma run — and deleted at the end).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LLAMA_BIN="${1:-}"
CHUNKS="${2:-16}"
if [ -z "$LLAMA_BIN" ] || [ ! -x "$LLAMA_BIN/llama-perplexity" ]; then
  echo "real_models_accuracy: no llama-perplexity at '${LLAMA_BIN}' — skipping the llama.cpp comparison" >&2
  exit 0
fi
SQ="$ROOT/build/release/tools/squeeze"
[ -x "$SQ" ] || { echo "real_models_accuracy: build squeeze first (scripts/test or scripts/demo)" >&2; exit 1; }
MODELS_DIR="$("$ROOT/scripts/get-models")"
OUT="$ROOT/build/bench-results/real-models"
mkdir -p "$OUT"
TEXT="$OUT/licenses.txt"
cat /usr/share/common-licenses/GPL-3 /usr/share/common-licenses/GPL-2 /usr/share/common-licenses/Apache-2.0 > "$TEXT"
summary="$OUT/summary.md"
echo "text: GPL-3 + GPL-2 + Apache-2.0 ($(sha256sum "$TEXT" | cut -c1-16)…), -c 512, $CHUNKS chunks, 2 threads" > "$summary"
echo "llama.cpp: $("$LLAMA_BIN/llama-perplexity" --version 2>&1 | head -1)" >> "$summary"

pick() {  # log label → the number after it
  grep -E "$2" "$1" | tail -1 | sed -E 's/.*[:=] *([0-9.e+-]+).*/\1/'
}
report() {  # name log  (a KL run, llama's or squeeze's output)
  printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$(pick "$2" '^Mean PPL\((Q|model)\) +:')" \
    "$(pick "$2" '^Mean PPL\(base\) +:')" "$(grep -E '^Mean +KLD' "$2" | sed -E 's/.*: *([0-9.e+-]+).*/\1/')" \
    "$(grep -E '^99.0% +KLD' "$2" | sed -E 's/.*: *([0-9.e+-]+).*/\1/')" \
    "$(grep -E '^Same top p' "$2" | sed -E 's/^[^:]*: *//')" >> "$summary"
}

for name in SmolLM2-135M-Instruct.Q4_1 gemma-3-270m-q4_k_m; do
  M="$MODELS_DIR/$name.gguf"
  [ -f "$M" ] || { echo "real_models_accuracy: $M is absent — skipped" >&2; continue; }
  L="$OUT/$name.llama.bin"
  S="$OUT/$name.exact.bin"
  log="$OUT/$name"
  echo "== $name" >&2
  "$LLAMA_BIN/llama-perplexity" -m "$M" -f "$TEXT" -c 512 --chunks "$CHUNKS" -t 2 --kl-divergence-base "$L" \
    > "$log.llama-ppl.log" 2>&1
  "$SQ" perplexity -m "$M" --kl-base "$L" -t 2 > "$log.squeeze-vs-llama.log" 2>&1
  "$SQ" perplexity -m "$M" -f "$TEXT" -c 512 --chunks "$CHUNKS" -t 2 --kv f32 --save-logits "$S" \
    > "$log.squeeze-exact-ppl.log" 2>&1
  "$LLAMA_BIN/llama-perplexity" -m "$M" --kl-divergence-base "$S" --kl-divergence -t 2 > "$log.llama-vs-exact.log" 2>&1
  "$SQ" perplexity -m "$M" --kl-base "$S" -t 2 > "$log.squeeze-vs-exact.log" 2>&1
  "$LLAMA_BIN/llama-perplexity" -m "$M" --kl-divergence-base "$L" --kl-divergence -fa off -t 2 \
    > "$log.llama-nofa-vs-llama.log" 2>&1
  {
    echo
    echo "### $name"
    echo "PPL llama.cpp: $(grep -E 'Final estimate' "$log.llama-ppl.log")"
    echo "PPL squeeze --kv f32 (exact): $(grep -E 'Final estimate' "$log.squeeze-exact-ppl.log")"
    echo
    echo "| model vs base: KL(base ‖ model) | PPL(model) | PPL(base) | mean KLD | 99% KLD | same top |"
    echo "|---|---|---|---|---|---|"
  } >> "$summary"
  report "squeeze (f16 KV) ‖ llama.cpp" "$log.squeeze-vs-llama.log"
  report "llama.cpp ‖ exact" "$log.llama-vs-exact.log"
  report "squeeze (f16 KV) ‖ exact" "$log.squeeze-vs-exact.log"
  report "llama.cpp FA off ‖ llama.cpp FA on" "$log.llama-nofa-vs-llama.log"
  rm -f "$L" "$S"
done
cat "$summary"
