"""tests/python/test_arch_plan.py — `squeeze plan` on the real gemma3 and llama (SmolLM2)
files and on the built-in configs of the same shapes: the config is read from the file's
metadata and tensor table, and the hybrid KV of gemma3 counts 15 local layers at
min(ctx, window + headroom) slots and 3 global layers at ctx (rounded up to the global
layers' 256-slot growth step, model/kv_slots.h)."""
import os
import pathlib
import re
import subprocess

import pytest

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")


def models_dir():
    env = os.environ.get("SQUEEZE_MODELS")
    return pathlib.Path(env) if env else pathlib.Path(__file__).resolve().parents[2] / "build" / "models"


def plan(*args):
    r = subprocess.run([SQ, "plan", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def kv_bytes(out, prefix):
    line = next(l for l in out.splitlines() if l.strip().startswith(prefix))
    return int(re.search(r"(\d+) B", line).group(1))


def real(name):
    path = models_dir() / name
    if not path.exists():
        pytest.skip(f"{path} not present (scripts/get-models fetches it)")
    return str(path)


@pytest.mark.parametrize("what", ["gemma3-270m", "gemma-3-270m-q4_k_m.gguf"])
def test_gemma3_hybrid_kv(what):
    src = real(what) if what.endswith(".gguf") else what
    out = plan(src, "--ctx", "4096", "--kv", "bf16", "--headroom", "64")
    assert "(gemma3)" in out and "[L L L L L G] x 3" in out
    per_token_layer = 2 * 1 * 256 * 2  # K and V, 1 KV head of 256, bf16
    assert kv_bytes(out, "KV cache, hybrid") == per_token_layer * (3 * 4096 + 15 * (512 + 64))
    assert kv_bytes(out, "KV cache, all layers global") == per_token_layer * 18 * 4096
    # a context inside the window: local layers hold only ctx tokens, global ones whole
    # 256-slot steps
    out = plan(src, "--ctx", "300", "--kv", "bf16", "--headroom", "64")
    assert kv_bytes(out, "KV cache, hybrid") == per_token_layer * (15 * 300 + 3 * 512)


@pytest.mark.parametrize("what", ["smollm2-135m", "SmolLM2-135M-Instruct.Q4_1.gguf"])
def test_smollm2_all_global_kv(what):
    src = real(what) if what.endswith(".gguf") else what
    out = plan(src, "--ctx", "8192", "--kv", "f16")
    assert "(llama)" in out and "30 layers, hidden 576, heads 9/3 x 64, FFN 1536, vocab 49152" in out
    assert kv_bytes(out, "KV cache, hybrid") == kv_bytes(out, "KV cache, all layers global") == 2 * 3 * 64 * 2 * 30 * 8192


def test_real_files_parameter_counts_match_the_builtin_shapes():
    # the file's tensor table and the built-in config describe the same model
    for name, cfg in [("gemma-3-270m-q4_k_m.gguf", "gemma3-270m"), ("SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2-135m")]:
        path = models_dir() / name
        if not path.exists():
            continue
        head = lambda out: re.search(r"([0-9.]+)B parameters", out).group(1)
        assert head(plan(str(path))) == head(plan(cfg))
