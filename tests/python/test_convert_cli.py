"""tests/python/test_convert_cli.py — `squeeze convert` on Hugging Face checkpoints built
here with numpy (safetensors written by hand, a byte-level BPE tokenizer.json), read back
with gguf-py: the keys and tensor names llama.cpp's converter writes, Q/K rows moved from
rotate-half to interleaved pairs (llama, muse-glimmer) or kept (gemma3), norm weights
stored as 1 + w where the architecture scales by 1 + w, Muse Glimmer's synthesised QK-norm
weights, types (F32 / F16 / BF16 / Q8_0, norms F32), and one-line errors for broken
checkpoints. The golden logits against transformers are in test_convert_golden.py.
"""
import json
import os
import shutil
import struct
import subprocess

import numpy as np
import pytest
from gguf import GGMLQuantizationType as QT
from gguf import GGUFReader
from gguf.quants import dequantize

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
RNG = np.random.default_rng(7)


def run(*args, ok=True):
    r = subprocess.run([SQ, *args], capture_output=True, text=True, errors="replace", timeout=300)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def bf16(x):
    """float32 → bfloat16 bits (round to nearest even) and the float32 values they hold."""
    u = np.asarray(x, np.float32).view(np.uint32)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32)


def write_safetensors(path, tensors):
    """tensors: name → (dtype name, array of the stored element type)."""
    header, blobs, off = {}, [], 0
    for name, (dtype, arr) in tensors.items():
        raw = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def byte_unicode():
    """GPT-2's byte → printable character table (the format's definition)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def write_tokenizer(d, n_vocab, specials):
    chars = byte_unicode()
    vocab = {chars[b]: b for b in range(256)}
    merges = [["Ġ", "t"], ["h", "e"], ["Ġt", "he"]]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    added = [{"id": len(vocab) + i, "content": s, "special": True} for i, s in enumerate(specials)]
    assert len(vocab) + len(added) <= n_vocab
    tok = {"version": "1.0", "added_tokens": added, "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
           "post_processor": None, "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "vocab": vocab, "merges": merges, "byte_fallback": False}}
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump(tok, f)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": specials[0], "eos_token": specials[1], "add_bos_token": True,
                   "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}"}, f)
    return added


SHAPE = dict(n_layer=2, E=64, H=4, Hk=2, D=16, F=96, V=300)


def make_checkpoint(d, arch, dtype="F32", drop=None, config_edit=None, shape_edit=None):
    """A random checkpoint of `arch` ("llama", "gemma3", "muse"); returns name → float32 array."""
    os.makedirs(d, exist_ok=True)
    s = SHAPE
    E, H, Hk, D, F, V, L = s["E"], s["H"], s["Hk"], s["D"], s["F"], s["V"], s["n_layer"]
    prefix = "model.language_model." if arch == "muse" else "model."
    w = {prefix + "embed_tokens.weight": RNG.normal(0, 1, (V, E)), prefix + "norm.weight": RNG.normal(1, 0.1, E)}
    for i in range(L):
        p = f"{prefix}layers.{i}."
        w[p + "input_layernorm.weight"] = RNG.normal(0.1, 0.1, E)
        w[p + "post_attention_layernorm.weight"] = RNG.normal(0.1, 0.1, E)
        w[p + "self_attn.q_proj.weight"] = RNG.normal(0, 0.1, (H * D, E))
        w[p + "self_attn.k_proj.weight"] = RNG.normal(0, 0.1, (Hk * D, E))
        w[p + "self_attn.v_proj.weight"] = RNG.normal(0, 0.1, (Hk * D, E))
        w[p + "self_attn.o_proj.weight"] = RNG.normal(0, 0.1, (E, H * D))
        w[p + "mlp.gate_proj.weight"] = RNG.normal(0, 0.1, (F, E))
        w[p + "mlp.up_proj.weight"] = RNG.normal(0, 0.1, (F, E))
        w[p + "mlp.down_proj.weight"] = RNG.normal(0, 0.1, (E, F))
        if arch in ("gemma3", "muse"):
            w[p + "pre_feedforward_layernorm.weight"] = RNG.normal(0.1, 0.1, E)
            w[p + "post_feedforward_layernorm.weight"] = RNG.normal(0.1, 0.1, E)
        if arch == "gemma3":
            w[p + "self_attn.q_norm.weight"] = RNG.normal(0.1, 0.1, D)
            w[p + "self_attn.k_norm.weight"] = RNG.normal(0.1, 0.1, D)
        if arch == "muse":
            w[p + "self_attn.gate_proj.weight"] = RNG.normal(0, 0.1, (H * D, E))
    if arch != "gemma3":
        w["lm_head.weight"] = RNG.normal(0, 0.1, (V, E))
    if arch == "muse":  # a vision tensor: left out of the text GGUF
        w["model.vision_tower.patch_embedder.proj.weight"] = RNG.normal(0, 1, (8, 4))
    if drop:
        del w[drop]
    if shape_edit:
        shape_edit(w)
    stored, values = {}, {}
    for name, a in w.items():
        a = np.asarray(a, np.float32)
        if dtype == "BF16":
            bits, vals = bf16(a)
            stored[name], values[name] = ("BF16", bits), vals
        elif dtype == "F16":
            stored[name], values[name] = ("F16", a.astype(np.float16)), a.astype(np.float16).astype(np.float32)
        else:
            stored[name], values[name] = ("F32", a), a
    write_safetensors(os.path.join(d, "model.safetensors"), stored)
    common = {"hidden_size": E, "intermediate_size": F, "num_hidden_layers": L, "num_attention_heads": H,
              "num_key_value_heads": Hk, "head_dim": D, "vocab_size": V, "max_position_embeddings": 512,
              "rms_norm_eps": 1e-5}
    if arch == "llama":
        cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **common, "rope_theta": 5000.0,
               "tie_word_embeddings": False, "hidden_act": "silu"}
    elif arch == "gemma3":
        cfg = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", **common, "sliding_window": 8,
               "layer_types": ["sliding_attention", "full_attention"], "rope_theta": 1000000.0,
               "rope_local_base_freq": 10000.0, "query_pre_attn_scalar": D, "hidden_activation": "gelu_pytorch_tanh"}
    else:
        cfg = {"architectures": ["MuseGlimmerForConditionalGeneration"], "model_type": "muse_glimmer",
               "text_config": {**common, "sliding_window": 8, "rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"},
                               "qk_scale_factor": 2.5, "output_multiplier": 0.25, "final_logit_softcapping": 20.0}}
    if config_edit:
        config_edit(cfg)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    write_tokenizer(d, V, ["<|begin|>", "<|end|>", "<|eot|>"])
    return values


def read_gguf(path):
    r = GGUFReader(path)
    kv = {}
    for f in r.fields.values():
        if f.types and f.types[0].name == "STRING":
            kv[f.name] = bytes(f.parts[f.data[0]]).decode()
        elif f.types and f.types[0].name == "ARRAY":
            kv[f.name] = [f.parts[i].tolist()[0] if f.parts[i].dtype != np.uint8 else bytes(f.parts[i]).decode() for i in f.data]
        else:
            kv[f.name] = f.parts[f.data[0]].tolist()[0]
    tensors = {}
    for t in r.tensors:
        cols = int(t.shape[0])
        tensors[t.name] = (t.tensor_type, dequantize(np.asarray(t.data), t.tensor_type).reshape(-1, cols).squeeze())
    return kv, tensors


def interleave(w, heads):
    """rotate-half rows (x_i, x_{i+D/2}) → interleaved pairs (x_2i, x_2i+1), per head."""
    rows, cols = w.shape
    return w.reshape(heads, 2, rows // heads // 2, cols).swapaxes(1, 2).reshape(rows, cols)


@pytest.mark.parametrize("arch", ["llama", "gemma3", "muse"])
def test_tensors_and_keys_as_llama_cpp_writes_them(tmp_path, arch):
    d = str(tmp_path / "hf")
    w = make_checkpoint(d, arch)
    out = str(tmp_path / "out.gguf")
    r = run("convert", d, out, "--type", "F32", "--quiet")
    kv, t = read_gguf(out)
    gguf_arch = {"llama": "llama", "gemma3": "gemma3", "muse": "muse-glimmer"}[arch]
    assert kv["general.architecture"] == gguf_arch
    assert kv[f"{gguf_arch}.block_count"] == 2 and kv[f"{gguf_arch}.embedding_length"] == 64
    assert kv[f"{gguf_arch}.attention.head_count_kv"] == 2 and kv[f"{gguf_arch}.feed_forward_length"] == 96
    assert kv["tokenizer.ggml.model"] == "gpt2" and kv["tokenizer.ggml.pre"] == "gpt-2"
    # 262 listed tokens: padded to the model's 300 ([PAD<id>], unused), except that Gemma 3's
    # embedding is cut to the listed tokens instead, as llama.cpp's converter does
    n_vocab = 262 if arch == "gemma3" else 300
    assert len(kv["tokenizer.ggml.tokens"]) == n_vocab
    assert kv["tokenizer.ggml.bos_token_id"] == 259 and kv["tokenizer.ggml.eos_token_id"] == 260
    assert kv["tokenizer.ggml.token_type"][259] == 3
    if arch != "gemma3":
        assert kv["tokenizer.ggml.tokens"][299] == "[PAD299]" and kv["tokenizer.ggml.token_type"][299] == 5
    assert kv["tokenizer.chat_template"].startswith("{% for m in messages %}")
    p = "model.language_model." if arch == "muse" else "model."
    # embeddings and V unchanged; Q and K interleaved except for gemma3 (NeoX RoPE)
    assert np.array_equal(t["token_embd.weight"][1], w[p + "embed_tokens.weight"][:n_vocab])
    assert np.array_equal(t["blk.1.attn_v.weight"][1], w[p + "layers.1.self_attn.v_proj.weight"])
    q, k = w[p + "layers.0.self_attn.q_proj.weight"], w[p + "layers.0.self_attn.k_proj.weight"]
    if arch == "gemma3":
        assert np.array_equal(t["blk.0.attn_q.weight"][1], q)
    else:
        assert np.array_equal(t["blk.0.attn_q.weight"][1], interleave(q, 4))
        assert np.array_equal(t["blk.0.attn_k.weight"][1], interleave(k, 2))
    shift = 1.0 if arch in ("gemma3", "muse") else 0.0
    np.testing.assert_array_equal(t["blk.0.attn_norm.weight"][1], w[p + "layers.0.input_layernorm.weight"] + np.float32(shift))
    final_shift = 1.0 if arch == "gemma3" else 0.0  # Muse Glimmer's final norm is a plain scale
    np.testing.assert_array_equal(t["output_norm.weight"][1], w[p + "norm.weight"] + np.float32(final_shift))
    if arch == "llama":
        np.testing.assert_array_equal(t["blk.0.ffn_norm.weight"][1], w[p + "layers.0.post_attention_layernorm.weight"])
        assert "output.weight" in t and "blk.0.post_attention_norm.weight" not in t
    if arch == "gemma3":
        assert "output.weight" not in t
        np.testing.assert_array_equal(t["blk.1.attn_q_norm.weight"][1], w[p + "layers.1.self_attn.q_norm.weight"] + np.float32(1))
        assert kv["gemma3.attention.sliding_window"] == 8
    if arch == "muse":
        assert kv["muse-glimmer.logit_scale"] == pytest.approx(0.25)
        assert kv["muse-glimmer.final_logit_softcapping"] == pytest.approx(20.0)
        assert kv["muse-glimmer.attention.sliding_window"] == 8
        assert kv["muse-glimmer.attention.sliding_window_pattern"] == [True, False]
        assert kv["tokenizer.ggml.eot_token_id"] == 261
        assert np.all(t["blk.0.attn_q_norm.weight"][1] == np.float32(2.5))
        assert np.all(t["blk.0.attn_k_norm.weight"][1] == 1.0)
        assert np.array_equal(t["blk.1.attn_gate.weight"][1], w[p + "layers.1.self_attn.gate_proj.weight"])
        np.testing.assert_array_equal(t["blk.1.post_ffw_norm.weight"][1],
                                      w[p + "layers.1.post_feedforward_layernorm.weight"] + np.float32(1))
        assert not any("vision" in n for n in t)
        assert "left out 1 checkpoint tensors" in r.stdout
    # the file runs
    assert run("generate", "-m", out, "-p", "the", "-n", "2", "--temp", "0").returncode == 0


@pytest.mark.parametrize("src,want,want_auto", [("F32", "F16", QT.F16), ("BF16", "BF16", QT.BF16), ("F16", "Q8_0", QT.F16)])
def test_types(tmp_path, src, want, want_auto):
    d = str(tmp_path / "hf")
    w = make_checkpoint(d, "muse", dtype=src)
    out, auto = str(tmp_path / "t.gguf"), str(tmp_path / "auto.gguf")
    run("convert", d, out, "--type", want, "--quiet")
    run("convert", d, auto, "--quiet")
    _, t = read_gguf(out)
    _, ta = read_gguf(auto)
    assert ta["blk.0.ffn_up.weight"][0] == want_auto  # auto: BF16 for a BF16 checkpoint, else F16
    assert t["blk.0.ffn_up.weight"][0] == QT[want]
    assert t["blk.0.attn_norm.weight"][0] == QT.F32 and t["blk.0.attn_q_norm.weight"][0] == QT.F32
    ref = w["model.language_model.layers.0.mlp.up_proj.weight"]
    got = t["blk.0.ffn_up.weight"][1]
    tol = {"F16": 1e-3, "BF16": 0.0, "Q8_0": 1e-2}[want]
    assert np.max(np.abs(got - ref)) <= tol * np.max(np.abs(ref)) + (0 if tol == 0 else 1e-6)


def expect_refused(checkpoint, out, needle):
    """convert refuses the checkpoint with one line holding `needle` and writes nothing."""
    r = run("convert", checkpoint, out, "--quiet", ok=False)
    assert r.returncode == 1, checkpoint
    assert needle in r.stderr, (checkpoint, r.stderr)
    assert r.stderr.count("\n") == 1, (checkpoint, r.stderr)
    assert not os.path.exists(out), checkpoint


def edit_safetensors_header(path, edit):
    """Rewrites a safetensors file's JSON header through edit(header); the data stays."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    edit(header)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def test_errors_are_one_line_and_leave_nothing(tmp_path):
    cases = [
        ("missing tensor", dict(drop="model.layers.1.mlp.up_proj.weight"), "'model.layers.1.mlp.up_proj.weight' is missing"),
        ("wrong shape", dict(shape_edit=lambda w: w.__setitem__("model.layers.0.self_attn.k_proj.weight", np.zeros((8, 64)))),
         "config.json implies [32, 64]"),
        ("rope scaling", dict(config_edit=lambda c: c.__setitem__("rope_scaling", {"rope_type": "yarn", "factor": 4.0})),
         "rope_type 'yarn' is not supported (default, linear, llama3)"),
        ("tied head contradicts lm_head", dict(config_edit=lambda c: c.__setitem__("tie_word_embeddings", True)),
         "ties the output head to the embedding (tie_word_embeddings), but the checkpoint has a different lm_head.weight"),
        ("untied head missing", dict(drop="lm_head.weight"), "'lm_head.weight' is missing"),
        ("unknown arch", dict(config_edit=lambda c: c.__setitem__("architectures", ["GPT2LMHeadModel"])), "not supported"),
        ("bias", dict(config_edit=lambda c: c.__setitem__("attention_bias", True)), "attention_bias"),
        ("bad field", dict(config_edit=lambda c: c.__setitem__("num_hidden_layers", "two")), "num_hidden_layers"),
        ("heads", dict(config_edit=lambda c: c.__setitem__("num_key_value_heads", 3)), "n_head_kv"),
    ]
    for name, kw, needle in cases:
        d = str(tmp_path / name.replace(" ", "_"))
        make_checkpoint(d, "llama", **kw)
        expect_refused(d, str(tmp_path / (name.replace(" ", "_") + ".gguf")), needle)
    # an I32 tensor where a float one belongs
    d = str(tmp_path / "int")
    make_checkpoint(d, "llama")
    edit_safetensors_header(os.path.join(d, "model.safetensors"),
                            lambda h: h["model.layers.0.mlp.up_proj.weight"].__setitem__("dtype", "I32"))
    expect_refused(d, str(tmp_path / "int.gguf"), "I32")
    # never replaces an input; an existing unrelated output is replaced only on success
    d = str(tmp_path / "ok")
    make_checkpoint(d, "llama")
    r = run("convert", d, os.path.join(d, "model.safetensors"), "--quiet", ok=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1
    assert os.path.getsize(os.path.join(d, "model.safetensors")) > 1000
    r = run("convert", d, str(tmp_path / "x.gguf"), "--type", "Q9_9", ok=False)
    assert r.returncode == 1 and "Q9_9" in r.stderr
    r = run("convert", str(tmp_path / "nonexistent"), str(tmp_path / "y.gguf"), ok=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1


def test_qwen3moe_config_errors_are_one_line(tmp_path):
    # The Qwen3-MoE fixture (tests/fixtures/hf_tiny/qwen3moe: 4 layers, 6 experts, top-3,
    # layer 2 dense) with one field of config.json made wrong at a time.
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "hf_tiny", "qwen3moe")
    cases = [
        ("mlp_only out of range", ("mlp_only_layers", [9]), '"mlp_only_layers" holds 9, not a layer index below 4'),
        ("no expert layer", ("mlp_only_layers", [0, 1, 2, 3]), "no layer has experts"),
        ("sparse step", ("decoder_sparse_step", 0), '"decoder_sparse_step" must be at least 1'),
        ("layers", ("num_hidden_layers", 10**12), '"num_hidden_layers" must be in [1, 4096]'),
        ("expert count", ("num_experts", 7), "'model.layers.0.mlp.gate.weight' has shape [6, 64], config.json implies [7, 64]"),
        ("top-k", ("num_experts_per_tok", 9), "n_expert_used"),
        ("expert size", ("moe_intermediate_size", 16), "config.json implies [16, 64]"),
    ]
    for name, (key, value), needle in cases:
        d = str(tmp_path / name.replace(" ", "_"))
        shutil.copytree(src, d)
        with open(os.path.join(d, "config.json")) as f:
            config = json.load(f)
        config[key] = value
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(config, f)
        expect_refused(d, str(tmp_path / (name.replace(" ", "_") + ".gguf")), needle)
    # one expert's tensor absent from a per-expert checkpoint (renamed in the header)
    d = str(tmp_path / "missing_expert")
    shutil.copytree(src, d)
    edit_safetensors_header(
        os.path.join(d, "model.safetensors"),
        lambda h: h.__setitem__("model.layers.1.mlp.experts.5.renamed", h.pop("model.layers.1.mlp.experts.5.up_proj.weight")))
    expect_refused(d, str(tmp_path / "missing_expert.gguf"), "'model.layers.1.mlp.experts.5.up_proj.weight' is missing")


def test_gpt_oss_config_and_mxfp4_errors_are_one_line(tmp_path):
    # The gpt-oss fixtures (tests/fixtures/hf_tiny/gpt-oss[-mxfp4]) made wrong one way at a time.
    fixtures = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "hf_tiny")
    cases = [
        ("limit", ("swiglu_limit", 8.0), "swiglu_limit / swiglu_alpha differ from gpt-oss's 7 / 1.702"),
        ("truncate", ("rope_parameters", {"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0,
                                          "original_max_position_embeddings": 4096, "truncate": True}),
         "YaRN truncate is true; a gpt-oss GGUF can only say false"),
        ("tied", ("tie_word_embeddings", True), "tie_word_embeddings is true"),
        ("experts", ("num_local_experts", 6), "config.json implies"),
    ]
    for name, (key, value), needle in cases:
        d = str(tmp_path / name)
        shutil.copytree(os.path.join(fixtures, "gpt-oss"), d)
        with open(os.path.join(d, "config.json")) as f:
            config = json.load(f)
        config[key] = value
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(config, f)
        expect_refused(d, str(tmp_path / (name + ".gguf")), needle)
    # MXFP4 blocks and scales whose shapes (same bytes) disagree with config.json
    for name, edit, needle in [
        ("scales", lambda h: h["model.layers.2.mlp.experts.down_proj_scales"].__setitem__("shape", [5, 32, 2]),
         "'model.layers.2.mlp.experts.down_proj_scales' has shape [5, 32, 2], config.json implies [5, 64, 1]"),
        ("blocks", lambda h: h["model.layers.0.mlp.experts.gate_up_proj_blocks"].__setitem__("shape", [5, 32, 4, 16]),
         "'model.layers.0.mlp.experts.gate_up_proj_blocks' has shape [5, 32, 4, 16], config.json implies [5, 64, 2, 16]"),
    ]:
        d = str(tmp_path / ("mxfp4_" + name))
        shutil.copytree(os.path.join(fixtures, "gpt-oss-mxfp4"), d)
        edit_safetensors_header(os.path.join(d, "model.safetensors"), edit)
        expect_refused(d, str(tmp_path / ("mxfp4_" + name + ".gguf")), needle)


def test_muse_layer_rope_theta(tmp_path):
    # transformers reads only the zeros of layer_rope_theta (NoPE); other values fall back to
    # rope_theta. Zeros must be exactly the full-attention layers (layer 1 of 2 here).
    ok = str(tmp_path / "ok")
    make_checkpoint(ok, "muse", config_edit=lambda c: c["text_config"].__setitem__("layer_rope_theta", [123.0, 0]))
    run("convert", ok, str(tmp_path / "ok.gguf"), "--type", "F32", "--quiet")
    kv, _ = read_gguf(str(tmp_path / "ok.gguf"))
    assert kv["muse-glimmer.rope.freq_base"] == 500000.0 and "muse-glimmer.rope.freq_base_swa" not in kv
    bad = str(tmp_path / "bad")
    make_checkpoint(bad, "muse", config_edit=lambda c: c["text_config"].__setitem__("layer_rope_theta", [0, 0]))
    r = run("convert", bad, str(tmp_path / "bad.gguf"), "--quiet", ok=False)
    assert r.returncode == 1 and "layer_rope_theta[0]" in r.stderr and r.stderr.count("\n") == 1


def test_tokenizer_normalizers_are_kept_or_refused(tmp_path):
    # convert used to drop tokenizer.json's normalizer silently: the ids then differed from
    # Hugging Face's on unnormalized text (decomposed accents under NFC, capitals under Lowercase).
    d = str(tmp_path / "nfc")
    make_checkpoint(d, "llama")
    path = os.path.join(d, "tokenizer.json")
    tok = json.load(open(path))
    tok["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]}
    json.dump(tok, open(path, "w"))
    out = str(tmp_path / "nfc.gguf")
    run("convert", d, out, "--quiet")
    ids = lambda text: run("tokenize", "-m", out, "-p", text).stdout.split()
    assert ids("Caf\u00e9") == ids("caf" + "e\u0301") == ids("caf\u00e9")
    assert ids("THE") == ids("the")
    for bad in ({"type": "BertNormalizer"}, {"type": "Replace", "pattern": {"Regex": " +"}, "content": " "},
                {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Precompiled", "precompiled_charsmap": ""}]}):
        tok["normalizer"] = bad
        json.dump(tok, open(path, "w"))
        r = run("convert", d, str(tmp_path / "bad.gguf"), "--quiet", ok=False)
        assert r.returncode != 0 and "normalizer" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not os.path.exists(tmp_path / "bad.gguf")
