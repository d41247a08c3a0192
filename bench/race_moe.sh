#!/usr/bin/env bash
# bench/race_moe.sh — squeeze vs llama.cpp (and ik_llama.cpp) on a Mixture-of-Experts model
# of a real shape with random weights, the engines back to back on the same file:
# Qwen3-30B-A3B (48 layers, 128 experts of FFN 768, 8 per token) at Q4_K_M, or with
# RACE_MOE_CONFIG=gpt-oss-20b gpt-oss-20b (24 layers, 32 experts of FFN 2880, 4 per token,
# sinks, window 128 on every other layer) at MXFP4_MOE (experts MXFP4, the rest Q8_0: the
# released file's layout, drawn directly in MXFP4 by make-model).
#
# usage: bench/race_moe.sh LLAMA_CPP_BIN_DIR [IK_LLAMA_BIN_DIR|-] [repetitions] [layers]
#   LLAMA_CPP_BIN_DIR holds llama-bench built OUTSIDE this repository from llama.cpp's
#   sources (without it the race is skipped, saying so); IK_LLAMA_BIN_DIR the same for
#   ik_llama.cpp ("-" or absent: its column is skipped, saying so). `layers` (default 48,
#   the released depth) makes the same shape with fewer layers, for a machine or a session
#   that cannot hold or make the whole one; the table says which.
# The model (build/race/, made once): `squeeze make-model --config qwen3-30b-a3b --type
# Q4_K_M`, written directly in the preset's mix (routers F32, attn_v / ffn_down_exps Q6_K on
# llama.cpp's more-bits layers, Q6_K head) — llama.cpp reads the same file. The whole
# shape is ~18.6 GB: the file is read by one engine at a time, so the page cache holds it
# once; free memory is logged before each run and the machine's major page faults (from
# /proc/vmstat, model loading included) after it — 0 means the timed runs read from memory.
# Tests as bench/race_families.sh (pp512, tg128, tg32 at depth 4096, f16 KV, 2 threads, two
# rounds with the engines' order reversed). Decode's bytes per token — attention, norms,
# router, head, one embedding row, and the routed experts' slabs (K of E per layer) — are
# read from the file, set against this machine's read bandwidth (bench_machine, 2 threads)
# as the decode roofline.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LLAMA_BIN="${1:-}"
IK_BIN="${2:--}"
REPS="${3:-1}"
CONFIG="${RACE_MOE_CONFIG:-qwen3-30b-a3b}"
case "$CONFIG" in
  qwen3-30b-a3b) TYPE=Q4_K_M FULL_LAYERS=48 ;;
  gpt-oss-20b) TYPE=MXFP4_MOE FULL_LAYERS=24 ;;
  *) echo "race_moe: RACE_MOE_CONFIG must be qwen3-30b-a3b or gpt-oss-20b (got $CONFIG)" >&2; exit 2 ;;
esac
LAYERS="${4:-$FULL_LAYERS}"
DEPTH="${RACE_DEPTH:-4096}"
SQ="$ROOT/build/release/tools/squeeze"
MACHINE="$ROOT/build/release/bench/bench_machine"
source "$ROOT/bench/race_lib.sh"
race_check_engines race_moe
OUT="$ROOT/build/race"
mkdir -p "$OUT"
name="$CONFIG"
[ "$LAYERS" = "$FULL_LAYERS" ] || name="$CONFIG-l$LAYERS"
MODEL="$OUT/$name-$(echo "$TYPE" | tr '[:upper:]' '[:lower:]').gguf"
if [ ! -f "$MODEL" ]; then
  echo "race_moe: making $MODEL ($LAYERS layers; qwen3-30b-a3b about 1.1 min per layer on 2 cores)" >&2
  "$SQ" make-model --config "$CONFIG" --layers "$LAYERS" --type "$TYPE" --seed 1 -o "$MODEL.part" 2>/dev/null >&2
  mv "$MODEL.part" "$MODEL"
fi

# After race_lib.sh, whose hooks do nothing.
race_before() {  # engine model
  echo "race_moe: before $1: $(free -m | awk '/^Mem:/ {print "free " $4 " MiB, available " $7 " MiB"}')" >&2
  majflt0=$(awk '/^pgmajfault/ {print $2}' /proc/vmstat)
}
race_after() {
  echo "race_moe: $1: $(($(awk '/^pgmajfault/ {print $2}' /proc/vmstat) - majflt0)) major page faults" >&2
}
results="$OUT/results-moe-$name.csv"
echo "engine,model,test,t_per_s" > "$results"
race_rounds "$results" "$MODEL"
echo "squeeze: squeeze bench -t 2 -r $REPS --kv f16; llama.cpp / ik_llama.cpp: llama-bench -t 2 -r $REPS -fa 1 (f16 KV)"
echo "model: $name ($LAYERS of $CONFIG's $FULL_LAYERS layers), $TYPE by squeeze make-model, random weights"
race_table "$results"

# Decode's bytes per token and the roofline they imply.
bandwidth=""
if [ -x "$MACHINE" ]; then
  bandwidth=$("$MACHINE" --benchmark_filter='BM_read_bandwidth_.*/2/' --benchmark_format=csv 2>/dev/null |
    python3 -c '
import csv, sys
rows = [r for r in csv.DictReader(l for l in sys.stdin if not l.startswith("Run on")) if r.get("bytes_per_second")]
print(max(float(r["bytes_per_second"]) for r in rows) if rows else "")' || true)
fi
"$ROOT/.venv/bin/python" - "$MODEL" "$results" "${bandwidth:-0}" <<'PY'
import csv, sys
import gguf
path, results, bw = sys.argv[1], sys.argv[2], float(sys.argv[3])
r = gguf.GGUFReader(path)
arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
E = int(r.fields[f"{arch}.expert_count"].parts[-1][0])
K = int(r.fields[f"{arch}.expert_used_count"].parts[-1][0])
per_token = {"attention + norms + routers": 0, "routed experts": 0, "output head": 0, "embedding row": 0}
for t in r.tensors:
    n = int(t.n_bytes)
    if t.name == "token_embd.weight":
        per_token["embedding row"] += n // int(t.shape[1])
    elif t.name == "output.weight":
        per_token["output head"] += n
    elif "_exps." in t.name:
        per_token["routed experts"] += n * K // E
    else:
        per_token["attention + norms + routers"] += n
total = sum(per_token.values())
print(f"\ndecode reads per token ({K} of {E} experts per layer): " +
      ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in per_token.items()) + f"; total {total / 2**20:.1f} MiB")
if bw > 0:
    roof = bw / total
    print(f"read bandwidth (bench_machine, 2 threads, best run of any stream count): {bw / 1e9:.1f} GB/s -> decode roofline {roof:.1f} tokens/s")
    tg = {}
    for row in csv.DictReader(open(results)):
        if row["test"] == "tg128":
            tg.setdefault(row["engine"], []).append(float(row["t_per_s"]))
    for engine, v in tg.items():
        mean = sum(v) / len(v)
        print(f"  {engine}: tg128 {mean:.1f} tokens/s = {100 * mean / roof:.0f}% of the roofline")
else:
    print("no bench_machine build: roofline skipped")
PY
