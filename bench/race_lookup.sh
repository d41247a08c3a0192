#!/usr/bin/env bash
# bench/race_lookup.sh LLAMA_CPP_BIN MODEL.gguf PROMPTS.txt [N_PREDICT] [DRAFT_MAX] [THREADS]
# Prompt-lookup speculative decoding side by side: llama.cpp's llama-lookup (its n-gram
# cache drafting, --spec-draft-n-max DRAFT_MAX) against `squeeze generate --lookup` with
# the same number of drafts per step (fixed), and squeeze adaptive, greedy, on each prompt
# of PROMPTS.txt (raw text, one per line) in turn. Prints decode tokens/s summed over the
# prompts and the drafts each engine kept. LLAMA_CPP_BIN is a llama.cpp build's bin/
# folder made outside this repository; without llama-lookup there, its rows are skipped.
set -euo pipefail
BIN="${1:?LLAMA_CPP_BIN}"; MODEL="${2:?MODEL.gguf}"; PROMPTS="${3:?PROMPTS.txt}"
N="${4:-128}"; DRAFT="${5:-3}"; T="${6:-2}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SQ="$ROOT/build/release/tools/squeeze"
LOOKUP="$BIN/llama-lookup"
[ -x "$LOOKUP" ] || { echo "race_lookup: $LOOKUP not found: llama.cpp rows skipped" >&2; LOOKUP=""; }
declare -A tok sec acc drf
add() { tok[$1]=$(( ${tok[$1]:-0} + $2 )); sec[$1]=$(python3 -c "print(${sec[$1]:-0} + $3)"); acc[$1]=$(( ${acc[$1]:-0} + $4 )); drf[$1]=$(( ${drf[$1]:-0} + $5 )); }
while IFS= read -r p; do
  [ -z "$p" ] && continue
  if [ -n "$LOOKUP" ]; then
    out=$("$LOOKUP" -m "$MODEL" -p "$p" -n "$N" --temp 0 -t "$T" --spec-draft-n-max "$DRAFT" --ignore-eos 2>&1 || true)
    n=$(grep -oP 'decoded\s+\K[0-9]+' <<<"$out" | tail -1); s=$(grep -oP 'decoded\s+[0-9]+ tokens in\s+\K[0-9.]+' <<<"$out" | tail -1)
    a=$(grep -oP 'n_accept\s+=\s+\K[0-9]+' <<<"$out" | tail -1); d=$(grep -oP 'n_drafted\s+=\s+\K[0-9]+' <<<"$out" | tail -1)
    [ -n "$n" ] && add llama "$n" "$s" "${a:-0}" "${d:-0}"
  fi
  for mode in plain fixed adaptive; do
    case $mode in plain) extra=();; fixed) extra=(--lookup --draft-fixed --draft-block $((DRAFT + 1)));; adaptive) extra=(--lookup --draft-block $((DRAFT + 1)));; esac
    err=$("$SQ" generate -m "$MODEL" -p "$p" -n "$N" --temp 0 --ignore-eos -t "$T" "${extra[@]}" 2>&1 >/dev/null)
    n=$(grep -oP 'generation: \K[0-9]+' <<<"$err"); s=$(grep -oP 'generation: [0-9]+ tokens in \K[0-9.]+' <<<"$err")
    a=$(grep -oP '\| \K[0-9]+(?= of [0-9]+ drafts kept)' <<<"$err" || echo 0); d=$(grep -oP 'of \K[0-9]+(?= drafts kept)' <<<"$err" || echo 0)
    add "squeeze-$mode" "$n" "$s" "${a:-0}" "${d:-0}"
  done
done < "$PROMPTS"
printf '| engine | tokens | seconds | tokens/s | drafts kept / drafted |\n|---|---|---|---|---|\n'
for k in llama squeeze-plain squeeze-fixed squeeze-adaptive; do
  [ -z "${tok[$k]:-}" ] && continue
  python3 -c "print('| $k | ${tok[$k]} | %.2f | %.1f | ${acc[$k]} / ${drf[$k]} |' % (${sec[$k]}, ${tok[$k]} / ${sec[$k]}))"
done
