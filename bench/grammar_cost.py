#!/usr/bin/env python3
"""What grammar-constrained sampling costs per token: `squeeze serve` decodes the same
prompt with no constraint and under JSON schemas, and the inter-token time of each is
compared in the same run (one slot, streaming /v1/completions, ignore_eos so that every
run decodes the same number of tokens; the schemas never close within them).

  bench/grammar_cost.py -m MODEL [--tokens 128] [--runs 5] [--threads 2]

Schemas: a long array of free strings (the worst case: inside a string nearly every token
is allowed, so the mask walks most of the vocabulary's trie), and a long array of small
objects of enums, integers and booleans (mostly structure, where the walk is pruned at the
first byte). Prints a Markdown table: tokens/s (median of runs) and the ratio to free text."""
import argparse
import http.client
import json
import os
import pathlib
import statistics
import sys
import time
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests/python"))
from serve_util import Server  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCHEMAS = {
    "none (free text)": None,
    "array of strings": {"type": "array", "minItems": 1000, "items": {"type": "string"}},
    "array of objects": {"type": "array", "minItems": 1000, "items": {"type": "object", "properties": {
        "color": {"enum": ["red", "green", "blue"]}, "count": {"type": "integer", "minimum": 0, "maximum": 999},
        "ok": {"type": "boolean"}}, "required": ["color", "count", "ok"]}},
}


def decode_rate(url, prompt, schema, tokens, seed):
    """Tokens per second between the first and the last streamed token."""
    u = urllib.parse.urlparse(url)
    body = {"prompt": prompt, "max_tokens": tokens, "temperature": 0.8, "seed": seed, "stream": True, "ignore_eos": True}
    if schema is not None:
        body["json_schema"] = schema
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200, r.read()
    stamps, text = [], ""
    for line in r:
        line = line.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[6:])
        for c in event.get("choices", []):
            if c.get("text"):
                stamps.append(time.perf_counter())
                text += c["text"]
    conn.close()
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]), text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", default=str(ROOT / "build/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--binary", default=os.environ.get("SQUEEZE_BIN", str(ROOT / "build/release/tools/squeeze")))
    a = ap.parse_args()
    if not pathlib.Path(a.model).exists():
        sys.exit(f"grammar_cost: {a.model} not found (scripts/get-models)")
    s = Server(a.binary, "-m", a.model, "--parallel", "1", "--threads", str(a.threads), "--ctx", "1024")
    try:
        prompt = "Here is a JSON list of things found in an old house:"
        decode_rate(s.url, prompt, None, 16, 0)  # warm-up
        rates = {name: [] for name in SCHEMAS}
        for run in range(a.runs):  # interleaved, so drift hits every case alike
            for name, schema in SCHEMAS.items():
                rate, text = decode_rate(s.url, prompt, schema, a.tokens, run)
                if schema is not None:
                    assert text.lstrip().startswith("["), text[:80]
                rates[name].append(rate)
    finally:
        s.stop()
    base = statistics.median(rates["none (free text)"])
    print(f"| constraint | tokens/s (median of {a.runs}; min–max) | vs free text |")
    print("|---|---|---|")
    for name, r in rates.items():
        print(f"| {name} | {statistics.median(r):.1f} ({min(r):.1f}–{max(r):.1f}) | {statistics.median(r) / base:.2f} |")


if __name__ == "__main__":
    main()
