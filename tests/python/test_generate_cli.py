"""tests/python/test_generate_cli.py — `squeeze generate` end to end: tokens stream, a timing
line closes, greedy output is reproducible and thread-count independent, and every kind
of bad input is one line on stderr with a non-zero exit."""
import os
import subprocess

import pytest

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")


def run(*args, check=True):
    r = subprocess.run([SQ, *args], capture_output=True, text=True, errors="replace", timeout=300)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("gen") / "g.gguf"
    run("make-model", "--config", "glimmer-tiny", "--embd", "256", "--ff", "512", "--head-dim", "64",
        "--type", "Q4_K", "--seed", "11", "-o", str(path))
    return path


def test_generates_and_reports_timing(model):
    r = run("generate", "-m", str(model), "-p", "The keeper", "-n", "16", "--temp", "0", "--ignore-eos")
    assert r.stdout.startswith("The keeper")
    assert len(r.stdout) > len("The keeper")
    last = r.stderr.strip().splitlines()[-1]
    assert "prompt:" in last and "generation: 16 tokens" in last and "KV:" in last


@pytest.mark.parametrize("batch", ["64", "5"])
def test_greedy_is_identical_for_any_thread_count(model, batch):
    # Work is split by shape, never by thread count, so every sum is the same.
    # (A different prefill batch changes the attention tiling and so the last bits of
    # some sums; test_model_reference.py bounds that difference.)
    outs = {run("generate", "-m", str(model), "-p", "The keeper climbed the stairs of the lighthouse", "-n", "24",
                "--temp", "0", "--ignore-eos", "-t", t, "--batch", batch).stdout
            for t in ["1", "2", "3"]}
    assert len(outs) == 1


def test_seeded_sampling_is_reproducible(model):
    a = run("generate", "-m", str(model), "-p", "x", "-n", "20", "--seed", "5", "--ignore-eos").stdout
    b = run("generate", "-m", str(model), "-p", "x", "-n", "20", "--seed", "5", "--ignore-eos").stdout
    assert a == b


def one_line_error(r, *needles):
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_bad_inputs(model, tmp_path):
    one_line_error(run("generate", "-m", str(tmp_path / "missing.gguf"), "-p", "x", check=False), "missing.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file at all" * 10)
    one_line_error(run("generate", "-m", str(junk), "-p", "x", check=False), "junk.gguf")
    one_line_error(run("generate", "-m", str(model), check=False), "-p")
    one_line_error(run("generate", "-m", str(model), "-p", "word " * 600, "--ctx", "64", check=False), "context")
    one_line_error(run("generate", "-m", str(model), "-p", "x", "--kv", "q3", check=False), "--kv")
    one_line_error(run("generate", "-m", str(model), "-p", "x", "-n", "abc", check=False), "-n")


def test_unsupported_architecture_and_missing_tensor(tmp_path):
    from gguf import GGUFReader, GGUFWriter  # noqa: F401  (the writer makes a foreign file)
    import numpy as np
    path = tmp_path / "other.gguf"
    w = GGUFWriter(str(path), "mamba")
    w.add_tensor("token_embd.weight", np.zeros((8, 4), dtype=np.float32))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    one_line_error(run("generate", "-m", str(path), "-p", "x", check=False), "mamba")

    path = tmp_path / "broken.gguf"
    w = GGUFWriter(str(path), "llama")
    for k, v in [("block_count", 1), ("embedding_length", 8), ("feed_forward_length", 16),
                 ("attention.head_count", 2), ("context_length", 64)]:
        w.add_uint32(f"llama.{k}", v)
    w.add_tensor("token_embd.weight", np.zeros((300, 8), dtype=np.float32))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    one_line_error(run("generate", "-m", str(path), "-p", "x", check=False), "blk.0.attn_norm.weight")


def timing_numbers(stderr):
    """(prompt tokens, generated tokens, KV bytes held, KV positions) from the timing line."""
    import re
    last = stderr.strip().splitlines()[-1]
    m = re.search(r"prompt: (\d+) tokens.*generation: (\d+) tokens.*KV: (\d+) bytes for (\d+) positions", last)
    assert m, last
    return tuple(int(x) for x in m.groups())


@pytest.mark.parametrize("kv", ["f16", "bf16", "f32"])
def test_generation_fills_the_context_exactly(model, kv):
    # --ctx 100 with a 16-token window: local rings (16 + 64 slots) are smaller than the
    # context, global layers round up to a 256-slot chunk. Generation runs every token it
    # can: the cache ends holding exactly --ctx positions, and one more token is sampled
    # from the last of them.
    r = run("generate", "-m", str(model), "-p", "The keeper", "-n", "500", "--temp", "0", "--ignore-eos",
            "--ctx", "100", "--batch", "8", "--kv", kv)
    assert "context of 100 tokens is full" in r.stderr
    prompt, generated, kv_bytes, positions = timing_numbers(r.stderr)
    assert positions == 100
    assert generated == 100 - prompt + 1
    # The cache holds what `squeeze plan` sizes for the same file, context, batch and type.
    import re
    plan = run("plan", str(model), "--ctx", "100", "--batch", "8", "--kv", kv).stdout
    m = re.search(r"KV cache, hybrid local/global\s+(\d+) B", plan)
    assert m, plan
    assert kv_bytes == int(m.group(1))


def test_kv_types_change_the_cache_size(model):
    sizes = {}
    for kv in ["f32", "bf16", "q8_0"]:
        r = run("generate", "-m", str(model), "-p", "The keeper", "-n", "4", "--temp", "0", "--ignore-eos", "--kv", kv)
        sizes[kv] = timing_numbers(r.stderr)[2]
    assert sizes["f32"] == 2 * sizes["bf16"]
    assert sizes["q8_0"] * 128 == sizes["f32"] * 34  # 34 bytes per 32 values
    for cmd in (["bench", "-m", str(model), "-p", "8", "-n", "4", "-r", "1"],):
        run(*cmd, "--kv", "bf16")
        one_line_error(run(*cmd, "--kv", "q4_0", check=False), "--kv", "q8_0")
