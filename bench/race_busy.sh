#!/usr/bin/env bash
# bench/race_busy.sh — decode speed on a busy machine: squeeze vs llama.cpp while two
# CPU-bound processes (plain `nice 0` busy loops) compete for the cores.
#
# usage: bench/race_busy.sh LLAMA_CPP_BUILD_BIN_DIR [MODEL.gguf [runs [tokens]]]
#   LLAMA_CPP_BUILD_BIN_DIR holds llama-bench built OUTSIDE this repository; without it
#   only squeeze is measured (saying so). MODEL defaults to SmolLM2-135M-Instruct Q4_1
#   from scripts/get-models. Each engine decodes `tokens` tokens (tg, 2 threads) `runs`
#   times, the engines alternating run by run, first on the quiet machine and then with
#   the two busy loops running; the table gives the medians and squeeze / llama.cpp.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LLAMA_BIN="${1:-}"
MODEL="${2:-$ROOT/build/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
RUNS="${3:-5}"
TOKENS="${4:-64}"
SQ="$ROOT/build/release/tools/squeeze"
[ -x "$SQ" ] || { echo "race_busy: build squeeze first (scripts/test or scripts/demo)" >&2; exit 1; }
[ -f "$MODEL" ] || { echo "race_busy: $MODEL: no such file (scripts/get-models installs the real models)" >&2; exit 1; }
HAVE_LLAMA=1
if [ -z "$LLAMA_BIN" ] || [ ! -x "$LLAMA_BIN/llama-bench" ]; then
  echo "race_busy: no llama-bench at '${LLAMA_BIN}' — measuring squeeze alone" >&2
  HAVE_LLAMA=0
fi

busy_pids=()
stop_busy() {
  for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  busy_pids=()
}
trap stop_busy EXIT

run_squeeze() {
  "$SQ" bench -m "$MODEL" -p 0 -n "$TOKENS" -r 1 -t 2 --csv | python3 -c '
import csv, sys
for r in csv.DictReader(sys.stdin): print(r["t_per_s"])'
}
run_llama() {
  "$LLAMA_BIN/llama-bench" -m "$MODEL" -p 0 -n "$TOKENS" -r 1 -t 2 -o csv 2>/dev/null | python3 -c '
import csv, sys
for r in csv.DictReader(sys.stdin): print(r["avg_ts"])'
}

results="$(mktemp)"
for load in quiet busy; do
  if [ "$load" = busy ]; then
    for _ in 1 2; do
      nice -n 0 sh -c 'while :; do :; done' &
      busy_pids+=("$!")
    done
  fi
  for ((i = 0; i < RUNS; ++i)); do
    echo "$load,squeeze,$(run_squeeze)" >> "$results"
    [ "$HAVE_LLAMA" = 1 ] && echo "$load,llama.cpp,$(run_llama)" >> "$results"
  done
  stop_busy
done

echo "model: $(basename "$MODEL"), tg$TOKENS, 2 threads, $RUNS alternating runs per engine and load"
python3 - "$results" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    load, engine, ts = line.strip().split(",")
    runs[(load, engine)].append(float(ts))
print("| load | engine | min t/s | median t/s | max t/s |")
print("|---|---|---|---|---|")
for (load, engine), v in sorted(runs.items()):
    print(f"| {load} | {engine} | {min(v):.1f} | {statistics.median(v):.1f} | {max(v):.1f} |")
for load in ("quiet", "busy"):
    s, l = runs.get((load, "squeeze")), runs.get((load, "llama.cpp"))
    if s and l:
        print(f"{load}: squeeze / llama.cpp = {statistics.median(s) / statistics.median(l):.2f} (medians)")
s = runs.get(("quiet", "squeeze")); b = runs.get(("busy", "squeeze"))
if s and b:
    print(f"squeeze busy / quiet = {statistics.median(b) / statistics.median(s):.2f}")
PY
rm -f "$results"
