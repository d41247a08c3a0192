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
# Tests: pp512, tg128, tg32 at depth 4096 (RACE_DEPTH), f16 KV, 2 threads; each engine runs
# each test in two rounds with the order of engines reversed in the second; the ratio is of
# the mean tokens/s. llama.cpp and ik_llama.cpp run with flash attention on (their
# fastest CPU setting here); their builds and flags are printed with the table.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LLAMA_BIN="${1:-}"
IK_BIN="${2:--}"
REPS="${3:-1}"
DEPTH="${RACE_DEPTH:-4096}"
if [ -z "$LLAMA_BIN" ] || [ ! -x "$LLAMA_BIN/llama-bench" ]; then
  echo "race_families: no llama-bench at '${LLAMA_BIN}' — skipping the race" >&2
  exit 0
fi
if [ "$IK_BIN" != "-" ] && [ ! -x "$IK_BIN/llama-bench" ]; then
  echo "race_families: no ik_llama.cpp llama-bench at '$IK_BIN' — racing llama.cpp only" >&2
  IK_BIN="-"
fi
[ "$IK_BIN" = "-" ] && echo "race_families: ik_llama.cpp not given — its column is skipped" >&2
SQ="$ROOT/build/release/tools/squeeze"
[ -x "$SQ" ] || { echo "race_families: build squeeze first (scripts/test or scripts/demo)" >&2; exit 1; }
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

# llama-bench CSV → engine,model,test,t/s. A row with both a prompt and generated tokens is a
# generation after a prompt (ik_llama.cpp's -gp) or at a depth (llama.cpp's -d).
parse_llama_bench() {  # engine model-name
  python3 -c '
import csv, sys
for r in csv.DictReader(sys.stdin):
    p, n, d = int(r["n_prompt"]), int(r["n_gen"]), int(r.get("n_depth", 0) or 0)
    if n and p:
        d, p = p, 0
    test = (f"pp{p}" if p else f"tg{n}") + (f" @ d{d}" if d else "")
    ts = float(r["avg_ts"])
    print(f"{sys.argv[1]},{sys.argv[2]},{test},{ts:.3f}")
    info = " ".join(k + "=" + str(r.get(k)) for k in ("build_commit", "cpu_info", "n_threads", "flash_attn", "type_k"))
    print(sys.argv[1] + ": " + info, file=sys.stderr)
' "$1" "$2"
}
run_llama() {  # model
  "$LLAMA_BIN/llama-bench" -m "$1" -t 2 -r "$REPS" -fa 1 -o csv -p 512 -n 128 2>/dev/null | parse_llama_bench llama.cpp "$(basename "$1")"
  "$LLAMA_BIN/llama-bench" -m "$1" -t 2 -r "$REPS" -fa 1 -o csv -p 0 -n 32 -d "$DEPTH" 2>/dev/null |
    parse_llama_bench llama.cpp "$(basename "$1")"
}
run_ik() {  # model
  "$IK_BIN/llama-bench" -m "$1" -t 2 -r "$REPS" -fa 1 -o csv -p 512 -n 128 2>/dev/null | parse_llama_bench ik_llama.cpp "$(basename "$1")"
  "$IK_BIN/llama-bench" -m "$1" -t 2 -r "$REPS" -fa 1 -o csv -p 0 -n 0 -gp "$DEPTH,32" 2>/dev/null |
    parse_llama_bench ik_llama.cpp "$(basename "$1")"
}
run_squeeze() {  # model
  "$SQ" bench -m "$1" -t 2 -r "$REPS" --kv f16 --csv -p 512 -n 128 -d 0 | python3 -c '
import csv, sys
for r in csv.DictReader(sys.stdin):
    print("squeeze,%s,%s,%.3f" % (sys.argv[1], r["test"], float(r["t_per_s"])))' "$(basename "$1")"
  "$SQ" bench -m "$1" -t 2 -r "$REPS" --kv f16 --csv -p 0 -n 32 -d "$DEPTH" | python3 -c '
import csv, sys
for r in csv.DictReader(sys.stdin):
    print("squeeze,%s,%s @ d%s,%.3f" % (sys.argv[1], r["test"], r["depth"], float(r["t_per_s"])))' "$(basename "$1")"
}
engines="llama squeeze"
[ "$IK_BIN" != "-" ] && engines="llama ik squeeze"
for round in 1 2; do
  for m in "${MODELS[@]}"; do
    order="$engines"
    [ "$round" = 2 ] && order="$(echo $engines | tr ' ' '\n' | tac | tr '\n' ' ')"
    for e in $order; do "run_$e" "$m" >> "$results"; done
  done
done
echo "squeeze: squeeze bench -t 2 -r $REPS --kv f16; llama.cpp / ik_llama.cpp: llama-bench -t 2 -r $REPS -fa 1 (f16 KV)"
python3 - "$results" <<'PY'
import csv, sys, collections
rows = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    rows[(r["model"], r["test"], r["engine"])].append(float(r["t_per_s"]))
keys = sorted({(m, t) for m, t, _ in rows})
mean = lambda v: sum(v) / len(v)
print("| model | test | llama.cpp t/s | ik_llama.cpp t/s | squeeze t/s | squeeze / llama.cpp | squeeze / ik_llama.cpp |")
print("|---|---|---|---|---|---|---|")
for m, t in keys:
    l, k, s = (rows.get((m, t, e)) for e in ("llama.cpp", "ik_llama.cpp", "squeeze"))
    if not (l and s):
        continue
    ik = f"{mean(k):.1f}" if k else "—"
    ikr = f"{mean(s) / mean(k):.2f}" if k else "—"
    print(f"| {m} | {t} | {mean(l):.1f} | {ik} | {mean(s):.1f} | {mean(s) / mean(l):.2f} | {ikr} |")
PY
