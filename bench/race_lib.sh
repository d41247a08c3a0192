# bench/race_lib.sh — the engines of the side-by-side races (sourced by race_families.sh
# and race_moe.sh): llama.cpp's and ik_llama.cpp's llama-bench and `squeeze bench` on one
# model, each appending engine,model,test,t_per_s rows to stdout; and the table of means.
# The caller sets LLAMA_BIN, IK_BIN ("-": none), SQ, REPS and DEPTH, then calls
# race_check_engines.

# race_check_engines WHO: without llama-bench in LLAMA_BIN the race is skipped (exit 0),
# saying so; an IK_BIN without one is dropped, saying so; squeeze must be built.
race_check_engines() {
  local who="$1"
  if [ -z "$LLAMA_BIN" ] || [ ! -x "$LLAMA_BIN/llama-bench" ]; then
    echo "$who: no llama-bench at '${LLAMA_BIN}' — skipping the race" >&2
    exit 0
  fi
  if [ "$IK_BIN" != "-" ] && [ ! -x "$IK_BIN/llama-bench" ]; then
    echo "$who: no ik_llama.cpp llama-bench at '$IK_BIN' — racing llama.cpp only" >&2
    IK_BIN="-"
  fi
  [ "$IK_BIN" = "-" ] && echo "$who: ik_llama.cpp not given — its column is skipped" >&2
  [ -x "$SQ" ] || { echo "$who: build squeeze first (scripts/test or scripts/demo)" >&2; exit 1; }
}

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
  [ "$DEPTH" = 0 ] && return
  "$LLAMA_BIN/llama-bench" -m "$1" -t 2 -r "$REPS" -fa 1 -o csv -p 0 -n 32 -d "$DEPTH" 2>/dev/null |
    parse_llama_bench llama.cpp "$(basename "$1")"
}
run_ik() {  # model
  "$IK_BIN/llama-bench" -m "$1" -t 2 -r "$REPS" -fa 1 -o csv -p 512 -n 128 2>/dev/null | parse_llama_bench ik_llama.cpp "$(basename "$1")"
  [ "$DEPTH" = 0 ] && return
  "$IK_BIN/llama-bench" -m "$1" -t 2 -r "$REPS" -fa 1 -o csv -p 0 -n 0 -gp "$DEPTH,32" 2>/dev/null |
    parse_llama_bench ik_llama.cpp "$(basename "$1")"
}
run_squeeze() {  # model
  "$SQ" bench -m "$1" -t 2 -r "$REPS" --kv f16 --csv -p 512 -n 128 -d 0 | python3 -c '
import csv, sys
for r in csv.DictReader(sys.stdin):
    print("squeeze,%s,%s,%.3f" % (sys.argv[1], r["test"], float(r["t_per_s"])))' "$(basename "$1")"
  [ "$DEPTH" = 0 ] && return
  "$SQ" bench -m "$1" -t 2 -r "$REPS" --kv f16 --csv -p 0 -n 32 -d "$DEPTH" | python3 -c '
import csv, sys
for r in csv.DictReader(sys.stdin):
    print("squeeze,%s,%s @ d%s,%.3f" % (sys.argv[1], r["test"], r["depth"], float(r["t_per_s"])))' "$(basename "$1")"
}
# Hooks around each engine's run on a model (race_moe.sh logs memory and page faults there).
race_before() { :; }
race_after() { :; }

# race_rounds RESULTS_CSV MODEL...: every engine on every model, in two rounds with the
# order of the engines reversed in the second.
race_rounds() {
  local results="$1" engines="llama squeeze" round m e order
  shift
  [ "$IK_BIN" != "-" ] && engines="llama ik squeeze"
  for round in 1 2; do
    for m in "$@"; do
      order="$engines"
      [ "$round" = 2 ] && order="$(echo $engines | tr ' ' '\n' | tac | tr '\n' ' ')"
      for e in $order; do
        race_before "$e" "$m"
        "run_$e" "$m" >> "$results"
        race_after "$e" "$m"
      done
    done
  done
}

# race_table RESULTS_CSV: mean tokens/s per engine and the ratios.
race_table() {
python3 - "$1" <<'PY'
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
}
