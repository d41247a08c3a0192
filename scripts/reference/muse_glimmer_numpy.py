"""scripts/reference/muse_glimmer_numpy.py — Muse Glimmer's text forward pass written out
in float64 numpy from a saved checkpoint folder (config.json + model.safetensors), used by
muse_glimmer_fixtures.py after it records the reference's outputs.

It exists so that the facts tests/fixtures/muse_glimmer/README.md states about the
reference (window length, rotate-half RoPE, which norms scale by 1 + w, the gate's input,
the embedding norm, logit scale then soft-cap, what hidden_states.npy holds) are not just
read off transformers' source but shown to reproduce its logits: if a later transformers
changes any of them, generation stops instead of silently recording different semantics.
"""
import json
import pathlib

import numpy as np
PREFIX = "model.language_model."


def read_safetensors(path):
    """name → float64 array. Parsed by hand: numpy has no bf16 type, and bf16 is the high
    half of an IEEE float32, so widening is a 16-bit shift."""
    raw = pathlib.Path(path).read_bytes()
    header_len = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + header_len])
    data = memoryview(raw)[8 + header_len:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        buf = data[begin:end]
        if info["dtype"] == "BF16":
            a = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32)
        elif info["dtype"] in ("F32", "F16", "F64"):
            a = np.frombuffer(buf, {"F32": "<f4", "F16": "<f2", "F64": "<f8"}[info["dtype"]])
        else:
            raise ValueError(f"{name}: dtype {info['dtype']}")
        out[name] = a.astype(np.float64).reshape(info["shape"])
    return out


def _rms(x, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def forward(folder, tokens):
    """Returns (logits [n, vocab], hidden [layers + 1, n, hidden]) with hidden laid out as
    transformers' output_hidden_states: normed embeddings, each layer's output except the
    last, then the final norm's output (which replaces the last layer's raw output)."""
    folder = pathlib.Path(folder)
    cfg = json.loads((folder / "config.json").read_text())["text_config"]
    w = read_safetensors(folder / "model.safetensors")
    n = len(tokens)
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, post_eps = cfg["rms_norm_eps"], cfg["post_norm_eps"]
    # layer_rope_theta only switches RoPE off (0); the modeling code uses one global theta.
    theta = cfg["rope_parameters"]["rope_theta"]
    inv_freq = 1.0 / theta ** (np.arange(0, hd, 2) / hd)
    ang = np.arange(n)[:, None] * inv_freq[None]
    cos = np.cos(np.concatenate([ang, ang], -1))[:, None]
    sin = np.sin(np.concatenate([ang, ang], -1))[:, None]

    def rope(t):  # rotate-half: element i pairs with i + head_dim / 2
        return t * cos + np.concatenate([-t[..., hd // 2:], t[..., :hd // 2]], -1) * sin

    x = _rms(w[PREFIX + "embed_tokens.weight"][np.asarray(tokens)], eps)
    hidden = [x]
    qi, kj = np.arange(n)[:, None], np.arange(n)[None]
    for layer in range(cfg["num_hidden_layers"]):
        p = PREFIX + f"layers.{layer}."
        h = _rms(x, eps) * (1.0 + w[p + "input_layernorm.weight"])
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(n, nh, hd)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(n, nkv, hd)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(n, nkv, hd)
        q = _rms(q, eps) * cfg["qk_scale_factor"]
        k = _rms(k, eps)
        if cfg["layer_rope_theta"][layer]:
            q, k = rope(q), rope(k)
        visible = kj <= qi
        if cfg["layer_types"][layer] == "sliding_attention":
            visible &= kj > qi - cfg["sliding_window"]  # `sliding_window` keys, the query's own included
        att = np.empty((n, nh, hd))
        for head in range(nh):
            kv = head // (nh // nkv)
            s = np.where(visible, q[:, head] @ k[:, kv].T / np.sqrt(hd), -np.inf)
            s = np.exp(s - s.max(1, keepdims=True))
            att[:, head] = (s / s.sum(1, keepdims=True)) @ v[:, kv]
        gated = att.reshape(n, nh * hd) * _sigmoid(h @ w[p + "self_attn.gate_proj.weight"].T)
        o = gated @ w[p + "self_attn.o_proj.weight"].T
        x = x + _rms(o, post_eps) * (1.0 + w[p + "post_attention_layernorm.weight"])
        h = _rms(x, eps) * (1.0 + w[p + "pre_feedforward_layernorm.weight"])
        g = h @ w[p + "mlp.gate_proj.weight"].T
        m = (g * _sigmoid(g) * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        x = x + _rms(m, post_eps) * (1.0 + w[p + "post_feedforward_layernorm.weight"])
        hidden.append(x)
    y = _rms(x, eps) * w[PREFIX + "norm.weight"]
    hidden[-1] = y
    cap = cfg["final_logit_softcapping"]
    logits = cap * np.tanh(y @ w["lm_head.weight"].T * cfg["output_multiplier"] / cap)
    return logits, np.stack(hidden)
