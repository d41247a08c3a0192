"""tests/python/test_model_plan.py — `squeeze plan`: Glimmer-30B's published figures for
glimmer-30b at 131072 tokens (bf16 KV: 6.5 GiB all-global, 1.7 GiB hybrid, 16x for 32 KV
heads; Q4_K_M weights about 17 GiB), and one-line errors for bad input."""
import json
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


def test_muse_glimmer_30b_released_figures():
    r = plan("muse-glimmer-30b", "--ctx", "131072")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "27.85B parameters" in out and "vocab 202048" in out and "FFN 19968" in out
    assert "embedding 1.345B, output head 1.345B" in out and "output gate included" in out
    rows = [l for l in out.splitlines() if l.startswith("  ")]
    row = lambda prefix: next(l for l in rows if l.strip().startswith(prefix))
    assert "16.92 GB" in row("weights (Q4_K_M)")  # the released text weights: ≈ 16.9 GB
    assert round(gib(row("KV cache, hybrid")), 1) == 1.7 and gib(row("KV cache, all layers global")) == 6.50
    assert "16x" in row("KV cache, MHA, all global")
    # the vision projector and the drafter, counted as transformers builds them
    assert "1.92B parameters, F16" in row("vision projector file") and "3843691520 B" in row("vision projector file")
    assert "2.56B parameters" in row("DFlash drafter")
    assert "device 24.00 GB / 22.35 GiB: fits" in out
    assert "with them: does NOT fit" in out


def test_plan_of_a_hugging_face_config(tmp_path):
    cfg = {"architectures": ["MuseGlimmerForConditionalGeneration"],
           "text_config": {"hidden_size": 512, "intermediate_size": 1024, "num_hidden_layers": 8, "num_attention_heads": 8,
                           "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 4096, "sliding_window": 128,
                           "max_position_embeddings": 4096},
           "vision_config": {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128, "patch_size": 14,
                             "patch_temporal": 2, "pos_emb_height": 4, "pos_emb_width": 4, "merge_size": 2},
           "out_hidden_size": 256, "projector_hidden_size": 128}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    for what in (str(tmp_path), str(tmp_path / "config.json")):
        r = plan(what)
        assert r.returncode == 0, r.stderr
        assert "(muse-glimmer)" in r.stdout and "pattern [L L L G] x 2" in r.stdout
        # 2 × (4·(64² + 64) + 2·64·128 + 128 + 64 + 4·64) + 64·2·3·14² + 4²·64 + 4·64 + 256·128 + 128² + 128·512
        want = 2 * (4 * (64 * 64 + 64) + 2 * 64 * 128 + 128 + 64 + 4 * 64) + 64 * 2 * 3 * 14 * 14 + 16 * 64 + 4 * 64 \
            + 256 * 128 + 128 * 128 + 128 * 512
        assert f"{2 * want} B" in r.stdout and "DFlash" not in r.stdout
    (tmp_path / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "hidden_size": "wide"}')
    r = plan(str(tmp_path))
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "config.json" in r.stderr
