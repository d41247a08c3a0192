#!/usr/bin/env python3
"""Loopback load tests of `squeeze serve`, and the race against llama-server.

  bench/serve_load.py load   -m MODEL [--clients 32] [--seconds 60] [--parallel 8]
      N clients loop streaming completions (mixed prompt lengths) for S seconds:
      requests/s, generated tokens/s, p50/p99 time to first token and inter-token latency,
      failures, server RSS before and after.
  bench/serve_load.py race   -m MODEL [--llama-server PATH] [--streams 1,4,8,16]
      the same streaming workload at each concurrency on squeeze serve and on llama-server
      (same file, threads and slots): aggregate generated tokens/s and p50 TTFT, and ratios.
  bench/serve_load.py prefix -m MODEL [--history 1000]
      time to first token of a second conversation turn after a ~1000-token first turn,
      with the slot's cache reused vs evicted (another conversation ran in between).

llama-server is never built here: pass --llama-server (or LLAMA_SERVER) pointing at a
binary built outside the repo; without one the race runs squeeze alone and says so.
Prints a Markdown table; --json FILE writes the numbers."""
import argparse
import concurrent.futures
import http.client
import json
import os
import pathlib
import random
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests/python"))
from serve_util import Server  # noqa: E402

WORDS = ("and the lord said unto moses speak unto the children of israel that they bring me an offering "
         "of every man that giveth it willingly with his heart ye shall take my offering").split()


def prompt_of(n_words, rng):
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def rss_kib(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def stream_completion(url, prompt, max_tokens, timeout=600):
    """One streaming completion: (ttft_s, [inter-token gaps], tokens, ok)."""
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True, "ignore_eos": True,
            "stream_options": {"include_usage": True}}
    t0 = time.perf_counter()
    conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    if r.status != 200:
        r.read()
        conn.close()
        return None, [], 0, False
    first, last, gaps, chunks, usage = None, None, [], 0, None
    buf = b""
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        data = line[6:]
        if data == b"[DONE]":
            break
        obj = json.loads(data)
        if obj.get("usage"):
            usage = obj["usage"]
        if obj.get("choices") and obj["choices"][0].get("text"):
            now = time.perf_counter()
            if first is None:
                first = now
            else:
                gaps.append(now - last)
            last = now
            chunks += 1
    conn.close()
    tokens = usage["completion_tokens"] if usage else chunks
    return (first - t0) if first else None, gaps, tokens, first is not None


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def run_load(url, clients, seconds, max_tokens, seed=0):
    """Clients loop until the deadline; each request's prompt is 8..200 words."""
    deadline = time.perf_counter() + seconds
    lock = threading.Lock()
    out = {"ttft": [], "gaps": [], "tokens": 0, "requests": 0, "failed": 0}

    def client(i):
        rng = random.Random(seed * 1000 + i)
        while time.perf_counter() < deadline:
            ttft, gaps, tokens, ok = stream_completion(url, prompt_of(rng.randint(8, 200), rng), max_tokens)
            with lock:
                if ok:
                    out["requests"] += 1
                    out["tokens"] += tokens
                    out["ttft"].append(ttft)
                    out["gaps"].extend(gaps)
                else:
                    out["failed"] += 1

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    out["wall"] = time.perf_counter() - t0
    return out


def run_fixed(url, streams, requests_per_stream, max_tokens, seed=1):
    """`streams` clients, each sending requests_per_stream requests back to back."""
    lock = threading.Lock()
    out = {"ttft": [], "tokens": 0, "failed": 0}

    def client(i):
        rng = random.Random(seed * 1000 + i)
        for _ in range(requests_per_stream):
            ttft, _, tokens, ok = stream_completion(url, prompt_of(rng.randint(16, 64), rng), max_tokens)
            with lock:
                out["tokens"] += tokens
                out["failed"] += 0 if ok else 1
                if ok:
                    out["ttft"].append(ttft)

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(streams) as pool:
        list(pool.map(client, range(streams)))
    out["wall"] = time.perf_counter() - t0
    return out


class LlamaServer:
    def __init__(self, binary, model, threads, parallel, ctx_per_slot):
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen([binary, "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port),
                                      "-t", str(threads), "-tb", str(threads), "-np", str(parallel),
                                      "-c", str(ctx_per_slot * parallel), "--no-webui"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}"
        end = time.time() + 120
        while time.time() < end:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.3)
        self.proc.kill()
        raise RuntimeError("llama-server did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


def squeeze_server(args, parallel, ctx):
    return Server(args.squeeze, "-m", str(args.model), "--parallel", str(parallel), "--ctx", str(ctx),
                  "--threads", str(args.threads), "--max-queue", "1024", "--max-connections", "128")


def cmd_load(args):
    s = squeeze_server(args, args.parallel, args.ctx)
    try:
        rss0 = rss_kib(s.proc.pid)
        run_load(s.url, args.clients, 5, args.max_tokens, seed=99)  # warm-up: buffers reach their size
        rss1 = rss_kib(s.proc.pid)
        r = run_load(s.url, args.clients, args.seconds, args.max_tokens)
        rss2 = rss_kib(s.proc.pid)
        # The same load again: a leak keeps growing, caches that reached their size do not.
        again = run_load(s.url, args.clients, args.seconds / 2, args.max_tokens, seed=7)
        rss3 = rss_kib(s.proc.pid)
        kv = s.metrics().get("squeeze_kv_cache_bytes", 0)
    finally:
        s.stop()
    res = {"clients": args.clients, "seconds": args.seconds, "parallel": args.parallel, "requests": r["requests"],
           "failed": r["failed"], "requests_per_s": r["requests"] / r["wall"], "tokens_per_s": r["tokens"] / r["wall"],
           "ttft_p50_s": pct(r["ttft"], 50), "ttft_p99_s": pct(r["ttft"], 99), "itl_p50_s": pct(r["gaps"], 50),
           "itl_p99_s": pct(r["gaps"], 99), "rss_start_mib": rss0 / 1024, "rss_after_warmup_mib": rss1 / 1024,
           "rss_end_mib": rss2 / 1024, "rss_after_second_run_mib": rss3 / 1024, "second_run_failed": again["failed"],
           "kv_cache_mib_at_end": kv / 2**20}
    print(f"| clients | parallel | requests | failed | req/s | gen tok/s | TTFT p50 / p99 | ITL p50 / p99 | RSS start / warm / end / again |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(f"| {args.clients} | {args.parallel} | {r['requests']} | {r['failed']} | {res['requests_per_s']:.2f} | "
          f"{res['tokens_per_s']:.1f} | {res['ttft_p50_s'] * 1e3:.0f} / {res['ttft_p99_s'] * 1e3:.0f} ms | "
          f"{res['itl_p50_s'] * 1e3:.1f} / {res['itl_p99_s'] * 1e3:.1f} ms | "
          f"{res['rss_start_mib']:.0f} / {res['rss_after_warmup_mib']:.0f} / {res['rss_end_mib']:.0f} / "
          f"{res['rss_after_second_run_mib']:.0f} MiB |")
    print(f"second run: {again['requests']} requests, {again['failed']} failed; KV cache held at the end: {res['kv_cache_mib_at_end']:.0f} MiB")
    return res


def cmd_race(args):
    streams = [int(x) for x in args.streams.split(",")]
    parallel = max(streams)
    llama = args.llama_server or os.environ.get("LLAMA_SERVER")
    if llama and not pathlib.Path(llama).exists():
        print(f"llama-server {llama} not found: racing squeeze alone", file=sys.stderr)
        llama = None
    if not llama:
        print("no --llama-server / LLAMA_SERVER given: squeeze alone (build llama-server outside the repo)", file=sys.stderr)
    rows = []
    for n in streams:
        row = {"streams": n}
        engines = [("squeeze", lambda: squeeze_server(args, parallel, args.ctx))]
        if llama:
            engines.append(("llama", lambda: LlamaServer(llama, args.model, args.threads, parallel, args.ctx)))
        for name, start in engines:
            srv = start()
            try:
                stream_completion(srv.url, "warm up", 4)
                r = run_fixed(srv.url, n, args.requests, args.max_tokens)
            finally:
                srv.stop()
            row[name] = {"tokens_per_s": r["tokens"] / r["wall"], "ttft_p50_s": pct(r["ttft"], 50), "failed": r["failed"]}
        rows.append(row)
    print("| streams | squeeze tok/s | squeeze TTFT p50 | llama-server tok/s | llama-server TTFT p50 | tok/s ratio |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        sq = row["squeeze"]
        ll = row.get("llama")
        ratio = f"{sq['tokens_per_s'] / ll['tokens_per_s']:.2f}" if ll else "—"
        lls = f"{ll['tokens_per_s']:.1f} | {ll['ttft_p50_s'] * 1e3:.0f} ms" if ll else "— | —"
        print(f"| {row['streams']} | {sq['tokens_per_s']:.1f} | {sq['ttft_p50_s'] * 1e3:.0f} ms | {lls} | {ratio} |")
    return {"streams": rows, "parallel": parallel, "max_tokens": args.max_tokens, "requests_per_stream": args.requests}


def cmd_prefix(args):
    import openai
    s = squeeze_server(args, 1, args.ctx)
    rng = random.Random(5)
    name = args.model.name
    try:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=600)

        def ttft(messages):
            t0 = time.perf_counter()
            st = c.chat.completions.create(model=name, messages=messages, max_tokens=4, temperature=0, stream=True,
                                           stream_options={"include_usage": True})
            t, usage = None, None
            for ch in st:
                if t is None and ch.choices and (ch.choices[0].delta.content or ch.choices[0].finish_reason):
                    t = time.perf_counter() - t0
                if ch.usage:
                    usage = ch.usage
            return t, usage

        reused, cold = [], []
        for rep in range(3):
            # A fresh conversation: a ~history-token first turn and its answer, then turn 2
            # right away (the slot still holds turn 1) and again after another request evicted it.
            first = [{"role": "user", "content": prompt_of(args.history * 3 // 4, rng)}]
            a = c.chat.completions.create(model=name, messages=first, max_tokens=32, temperature=0)
            turn2 = first + [{"role": "assistant", "content": a.choices[0].message.content},
                             {"role": "user", "content": "And then?"}]
            reused.append(ttft(turn2))
            c.completions.create(model=name, prompt=prompt_of(50, rng) + f" {rep}", max_tokens=2)  # evicts the slot
            cold.append(ttft(turn2))
    finally:
        s.stop()
    t_reuse = statistics.median(x[0] for x in reused)
    t_cold = statistics.median(x[0] for x in cold)
    res = {"prompt_tokens": reused[0][1].prompt_tokens, "cached_tokens_reuse": reused[0][1].prompt_tokens_details.cached_tokens,
           "cached_tokens_cold": cold[0][1].prompt_tokens_details.cached_tokens, "ttft_reuse_s": t_reuse,
           "ttft_cold_s": t_cold, "speedup": t_cold / t_reuse}
    print("| turn-2 prompt tokens | cached (reuse / evicted) | TTFT reuse | TTFT evicted | speed-up |")
    print("|---|---|---|---|---|")
    print(f"| {res['prompt_tokens']} | {res['cached_tokens_reuse']} / {res['cached_tokens_cold']} | "
          f"{t_reuse * 1e3:.0f} ms | {t_cold * 1e3:.0f} ms | {res['speedup']:.1f}x |")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["load", "race", "prefix"])
    ap.add_argument("-m", "--model", type=pathlib.Path, required=True)
    ap.add_argument("--squeeze", default=os.environ.get("SQUEEZE_BIN", str(ROOT / "build/release/tools/squeeze")))
    ap.add_argument("--llama-server")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--ctx", type=int, default=1024, help="context per slot")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--streams", default="1,4,8,16")
    ap.add_argument("--requests", type=int, default=3, help="race: requests per stream")
    ap.add_argument("--history", type=int, default=1000, help="prefix: tokens of the first turn")
    ap.add_argument("--json")
    args = ap.parse_args()
    if not args.model.exists():
        sys.exit(f"{args.model} not found (scripts/get-models installs the real models)")
    res = {"load": cmd_load, "race": cmd_race, "prefix": cmd_prefix}[args.mode](args)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
