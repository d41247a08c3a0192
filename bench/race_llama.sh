#!/usr/bin/env bash
# bench/race_llama.sh — squeeze vs llama.cpp on the same GGUF files, back to back.
#
# usage: [RACE_DEPTHS="4096 16384"] bench/race_llama.sh LLAMA_CPP_BUILD_BIN_DIR [repetitions [MODEL.gguf ...]]
#   LLAMA_CPP_BUILD_BIN_DIR holds llama-bench (and llama-quantize) built OUTSIDE this
#   repository from llama.cpp's own sources; without it the race is skipped, saying so.
#   MODEL.gguf: race these files (e.g. the real models of scripts/get-models) instead of
#   the default pair, results in build/race/results-real.csv.
# Default models: a 70.5M llama shape (512 wide, 12 layers,
# 8 heads / 4 KV, FFN 1536, vocabulary 32000) with random weights, as F32 and as Q4_K_M
# (made by llama-quantize from the F32 file, so squeeze also reads llama.cpp's output).
# Each engine runs pp512 and tg128 (and tg32 at each depth of RACE_DEPTHS, default 4096,
# with f16 and with q8_0 KV) with 2 threads; the engines
# alternate, twice, and the ratio is squeeze / llama.cpp of the mean tokens/s. llama.cpp
# runs with its defaults made explicit (f16 KV, flash attention on, weight repacking);
# its build, CPU backend and every flag are recorded in build/race/llama_flags.txt and
# printed with the table.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LLAMA_BIN="${1:-}"
REPS="${2:-3}"
if [ -z "$LLAMA_BIN" ] || [ ! -x "$LLAMA_BIN/llama-bench" ]; then
  echo "race_llama: no llama-bench at '${LLAMA_BIN}' — skipping the llama.cpp comparison" >&2
  exit 0
fi
SQ="$ROOT/build/release/tools/squeeze"
[ -x "$SQ" ] || { echo "race_llama: build squeeze first (scripts/test or scripts/demo)" >&2; exit 1; }
OUT="$ROOT/build/race"
mkdir -p "$OUT"
if [ $# -gt 2 ]; then
  MODELS=("${@:3}")
  for m in "${MODELS[@]}"; do [ -f "$m" ] || { echo "race_llama: $m: no such file" >&2; exit 1; }; done
  results="$OUT/results-real.csv"
  flags="$OUT/llama_flags-real.txt"
else
  F32="$OUT/llama70-f32.gguf"
  Q4="$OUT/llama70-q4_k_m.gguf"
  [ -f "$F32" ] || "$SQ" make-model --config llama-1b --arch llama --layers 12 --embd 512 --heads 8 --kv-heads 4 \
    --head-dim 64 --ff 1536 --vocab 32000 --ctx 8192 --type F32 --seed 1 -o "$F32" >&2
  [ -f "$Q4" ] || "$LLAMA_BIN/llama-quantize" "$F32" "$Q4" Q4_K_M 2 >/dev/null 2>&1
  MODELS=("$F32" "$Q4")
  results="$OUT/results.csv"
  flags="$OUT/llama_flags.txt"
fi
echo "engine,model,test,t_per_s" > "$results"
: > "$flags"
LLAMA_FLAGS=(-t 2 -r "$REPS" -fa 1)
DEPTHS="${RACE_DEPTHS:-4096}"  # e.g. RACE_DEPTHS="4096 16384"
run_llama() {  # kv-type model tests...
  "$LLAMA_BIN/llama-bench" -m "$2" "${LLAMA_FLAGS[@]}" -ctk "$1" -ctv "$1" -o csv "${@:3}" 2>/dev/null |
    python3 -c '
import csv, sys
flags = open(sys.argv[2], "a")
for r in csv.DictReader(sys.stdin):
    p, n, d = int(r["n_prompt"]), int(r["n_gen"]), int(r.get("n_depth", 0) or 0)
    kv = r["type_k"]
    test = (f"pp{p}" if p else f"tg{n}") + (f" @ d{d}" if d else "") + ("" if kv == "f16" else f" ({kv} KV)")
    ts = float(r["avg_ts"])
    print(f"llama.cpp,{sys.argv[1]},{test},{ts:.3f}")
    keys = ("build_commit", "build_number", "backends", "cpu_info", "n_threads", "type_k", "type_v",
            "flash_attn", "n_batch", "n_ubatch", "no_kv_offload", "use_mmap", "repack")
    flags.write(f"{sys.argv[1]} {test}: " + " ".join(f"{k}={r[k]}" for k in keys if k in r) + "\n")
' "$(basename "$2")" "$flags"
}
run_squeeze() {  # kv-type model tests...
  "$SQ" bench -m "$2" -t 2 -r "$REPS" --kv "$1" --csv "${@:3}" |
    python3 -c '
import csv, sys
for r in csv.DictReader(sys.stdin):
    d, test, ts = int(r["depth"]), r["test"], float(r["t_per_s"])
    suffix = (f" @ d{d}" if d else "") + ("" if sys.argv[2] == "f16" else f" ({sys.argv[2]} KV)")
    print(f"squeeze,{sys.argv[1]},{test}{suffix},{ts:.3f}")' "$(basename "$2")" "$1"
}
for round in 1 2; do
  for m in "${MODELS[@]}"; do
    if [ "$round" = 1 ]; then order="llama squeeze"; else order="squeeze llama"; fi
    for e in $order; do
      "run_$e" f16 "$m" -p 512 -n 128 >> "$results"
      for depth in $DEPTHS; do
        "run_$e" f16 "$m" -p 0 -n 32 -d "$depth" >> "$results"
        "run_$e" q8_0 "$m" -p 0 -n 32 -d "$depth" >> "$results"
      done
    done
  done
done
echo "llama.cpp: llama-bench ${LLAMA_FLAGS[*]} (from $LLAMA_BIN)"
sort -u -t: -k2 "$flags" | sed 's/^[^ ]* [^:]*: /llama.cpp run: /' | sort -u
echo "squeeze: squeeze bench -t 2 -r $REPS --kv f16 (q8_0 rows: --kv q8_0; llama.cpp -ctk q8_0 -ctv q8_0)"
python3 - "$results" <<'PY'
import csv, sys, collections
rows = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    rows[(r["model"], r["test"], r["engine"])].append(float(r["t_per_s"]))
keys = sorted({(m, t) for m, t, _ in rows})
print("| model | test | llama.cpp t/s | squeeze t/s | squeeze / llama.cpp |")
print("|---|---|---|---|---|")
for m, t in keys:
    l = rows.get((m, t, "llama.cpp")); s = rows.get((m, t, "squeeze"))
    if l and s:
        lm, sm = sum(l) / len(l), sum(s) / len(s)
        print(f"| {m} | {t} | {lm:.1f} | {sm:.1f} | {sm / lm:.2f} |")
PY
