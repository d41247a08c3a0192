"""tests/python/test_model_plan.py — `squeeze plan`: Glimmer-30B's published figures for
glimmer-30b at 131072 tokens (bf16 KV: 6.5 GiB all-global, 1.7 GiB hybrid, 16x for 32 KV
heads; Q4_K_M weights about 17 GiB), and one-line errors for bad input."""
import os
import re
import subprocess

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")


def plan(*args):
    return subprocess.run([SQ, "plan", *args], capture_output=True, text=True, timeout=60)


def gib(line):
    return float(re.search(r"/ ([0-9.]+) GiB", line).group(1))


def test_glimmer_30b_spec_figures():
    r = plan("glimmer-30b", "--ctx", "131072", "--kv", "bf16", "--type", "Q4_K_M", "--device", "24GB")
    assert r.returncode == 0, r.stderr
    rows = [l for l in r.stdout.splitlines() if l.startswith("  ")]
    row = lambda prefix: next(l for l in rows if l.strip().startswith(prefix))
    assert gib(row("KV cache, all layers global")) == 6.50
    assert round(gib(row("KV cache, hybrid")), 1) == 1.7
    b = lambda l: int(re.search(r"(\d+) B", l).group(1))
    assert b(row("KV cache, MHA, all global")) == 16 * b(row("KV cache, all layers global"))
    assert b(row("KV cache, MHA (32 KV heads), hybrid")) == 16 * b(row("KV cache, hybrid"))
    assert "16x" in row("KV cache, MHA, all global")
    w = row("weights (Q4_K_M)")
    assert round(gib(w), 1) == 17.1 and "18.37 GB" in w and "4.85 bpw" in w
    assert "fits" in r.stdout and "NOT" not in r.stdout


def test_small_device_does_not_fit():
    r = plan("glimmer-30b", "--device", "16GiB")
    assert r.returncode == 0, r.stderr
    assert "does NOT fit" in r.stdout


def test_bad_input_is_one_line_error():
    for args, needle in [([], "CONFIG"), (["nope"], "nope"), (["glimmer-30b", "--kv", "int3"], "int3"),
                         (["glimmer-30b", "--device", "24G"], "24G"), (["glimmer-30b", "--ctx", "0"], "ctx"),
                         (["glimmer-30b", "--type", "Q9"], "Q9"), (["glimmer-30b", "--ctx", "abc"], "abc"),
                         (["missing-model.gguf"], "missing-model.gguf")]:
        r = plan(*args)
        assert r.returncode == 1, args
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert needle in r.stderr, (args, r.stderr)


def test_plan_of_a_gguf_file_uses_its_exact_bytes(tmp_path):
    path = tmp_path / "m.gguf"
    made = subprocess.run([SQ, "make-model", "--config", "glimmer-tiny", "-o", str(path)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    r = plan(str(path), "--ctx", "256")
    assert r.returncode == 0, r.stderr
    assert "exact, from the file" in r.stdout
    assert "6 local (window 16" in r.stdout
