#!/usr/bin/env python3
"""`squeeze serve` under abuse, on loopback: the numbers of docs/security.md.

  bench/serve_abuse.py [--bin build/release/tools/squeeze] [-m MODEL] [--seconds 60] [--json FILE]

Scenarios, each against a fresh server:
  starve   64 trickling connections (one header byte every 0.5 s, reconnecting when closed)
           plus 8 clients looping valid streaming chat requests for --seconds: /health
           latency p50/p99/max (one probe every 0.2 s), valid requests done/failed, peak RSS.
  memory   8 threads x 6 requests of 3.5 MB chat content (refused as past the context after
           tokenizing): RSS before, peak, after.
  keys     an object of 100k keys (1.2 MB): seconds to the answer and its status.
  bomb     (with --mmproj) an 8192 x 8192 PNG of ~200 KB: seconds to the answer, RSS growth.
Works against any build, so the same script measures main before a fix (pass its --bin).
Prints a Markdown table; --json FILE writes the numbers."""
import argparse
import http.client
import json
import pathlib
import socket
import statistics
import struct
import sys
import threading
import time
import urllib.parse
import zlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests/python"))
from serve_util import Server  # noqa: E402


def rss_mib(proc):
    try:
        for line in pathlib.Path(f"/proc/{proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


class RssSampler:
    def __init__(self, proc):
        self.proc, self.peak, self._stop = proc, 0.0, threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self._stop.is_set():
            r = rss_mib(self.proc)
            if r == r:
                self.peak = max(self.peak, r)
            time.sleep(0.05)

    def stop(self):
        self._stop.set()
        return self.peak


def address(server):
    u = urllib.parse.urlparse(server.url)
    return u.hostname, u.port


def post(addr, path, body, timeout=120, stream=False):
    conn = http.client.HTTPConnection(*addr, timeout=timeout)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", path, data, {"Content-Type": "application/json"})
    r = conn.getresponse()
    text = r.read()
    conn.close()
    return r.status, text


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def starve(args):
    s = Server(args.bin, "-m", args.model, "--parallel", "4", "--threads", "2")
    addr, stop = address(s), threading.Event()
    done, failed, health = [0], [0], []
    sampler = RssSampler(s.proc)
    rss0 = rss_mib(s.proc)

    def trickler():
        while not stop.is_set():
            try:
                sock = socket.create_connection(addr, timeout=5)
                sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\n")
                while not stop.is_set():
                    sock.sendall(b"X")
                    time.sleep(0.5)
            except OSError:
                time.sleep(0.1)

    def client(i):
        while not stop.is_set():
            try:
                code, text = post(addr, "/v1/chat/completions", {
                    "messages": [{"role": "user", "content": f"Who begat Enos? ({i})"}], "max_tokens": 32,
                    "temperature": 0, "stream": True}, timeout=60)
                ok = code == 200 and text.rstrip().endswith(b"data: [DONE]")
                (done if ok else failed)[0] += 1
            except OSError:
                failed[0] += 1

    threads = [threading.Thread(target=trickler, daemon=True) for _ in range(64)]
    threads += [threading.Thread(target=client, args=(i,), daemon=True) for i in range(8)]
    for t in threads:
        t.start()
    time.sleep(2)
    end = time.time() + args.seconds
    while time.time() < end:
        t0 = time.perf_counter()
        try:
            conn = http.client.HTTPConnection(*addr, timeout=30)
            conn.request("GET", "/health")
            ok = conn.getresponse().status == 200
            conn.close()
        except OSError:
            ok = False
        health.append((time.perf_counter() - t0) * 1000 if ok else float("inf"))
        time.sleep(0.2)
    stop.set()
    time.sleep(1)
    t0 = time.time()
    code = s.stop(timeout=60)
    stop_s = time.time() - t0
    return {"health_probes": len(health), "health_failed": sum(h == float("inf") for h in health),
            "health_p50_ms": pct(health, 0.5), "health_p99_ms": pct(health, 0.99), "health_max_ms": max(health),
            "valid_done": done[0], "valid_failed": failed[0], "rss_start_mib": rss0, "rss_peak_mib": sampler.stop(),
            "sigterm_to_exit_s": stop_s, "exit_code": code}


def memory(args):
    s = Server(args.bin, "-m", args.model, "--parallel", "4", "--threads", "2")
    addr = address(s)
    before = rss_mib(s.proc)
    sampler = RssSampler(s.proc)
    body = json.dumps({"messages": [{"role": "user", "content": "and the lord said " * 194_000}], "max_tokens": 1}).encode()
    statuses = []

    def worker():
        for _ in range(6):
            try:
                statuses.append(post(addr, "/v1/chat/completions", body, timeout=300)[0])
            except OSError:
                statuses.append(-1)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(1)
    after = rss_mib(s.proc)
    s.stop()
    return {"requests": len(statuses), "body_mb": len(body) / 1e6, "statuses": sorted(set(statuses)),
            "rss_before_mib": before, "rss_peak_mib": sampler.stop(), "rss_after_mib": after}


def keys(args):
    s = Server(args.bin, "-m", args.model, "--parallel", "1", "--threads", "2")
    body = ("{" + ",".join(f'"k{i}":{i}' for i in range(100_000)) + ', "messages": []}').encode()
    t0 = time.time()
    code, _ = post(address(s), "/v1/chat/completions", body, timeout=600)
    out = {"keys": 100_000, "body_mb": len(body) / 1e6, "status": code, "seconds": time.time() - t0}
    s.stop()
    return out


def png_of(width, height):
    """A valid grey PNG of width x height zero pixels, compressed (~200 KB at 8192^2)."""
    raw = zlib.compress((b"\0" + b"\0" * width) * height, 9)
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", raw) + chunk(b"IEND", b""))


def bomb(args):
    import base64
    s = Server(args.bin, "-m", args.vlm, "--mmproj", args.mmproj, "--parallel", "1", "--threads", "2")
    png = png_of(8192, 8192)
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "Click OK"},
                                                      {"type": "image_url", "image_url": {"url": url}}]}], "max_tokens": 1}
    before = rss_mib(s.proc)
    sampler = RssSampler(s.proc)
    t0 = time.time()
    code, text = post(address(s), "/v1/chat/completions", body, timeout=600)
    out = {"png_kb": len(png) / 1e3, "status": code, "seconds": time.time() - t0, "rss_before_mib": before,
           "rss_peak_mib": sampler.stop(), "message": json.loads(text).get("error", {}).get("message", "")[:120]}
    s.stop()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=str(ROOT / "build/release/tools/squeeze"))
    ap.add_argument("-m", "--model", default=str(ROOT / "models/muse-glimmer-kjv.f16.gguf"))
    ap.add_argument("--vlm", default=str(ROOT / "models/ui-vlm.q8_0.gguf"))
    ap.add_argument("--mmproj", default=str(ROOT / "models/ui-vlm-mmproj.f16.gguf"))
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--only", default="starve,memory,keys,bomb")
    ap.add_argument("--json")
    args = ap.parse_args()
    results = {}
    for name in args.only.split(","):
        results[name] = globals()[name](args)
        print(f"| {name} | " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                          for k, v in results[name].items()) + " |", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
