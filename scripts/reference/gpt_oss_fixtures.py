"""scripts/reference/gpt_oss_fixtures.py — tiny random gpt-oss checkpoints made by
transformers 5.25 (GptOssForCausalLM) and the reference's outputs, for
tests/python/test_convert_golden.py; called by muse_glimmer_fixtures.main (cases `gpt-oss`,
`gpt-oss-mxfp4`).

Both cases exercise what gpt-oss adds (model-families.md §5): Q/K/V/O biases, a learned
sink per head (random, N(0, 1), so that it matters next to the scores), sliding layers of
window 8 under a 75-token prompt, YaRN (factor 32 over 4096 positions, untruncated: with
head_dim 16 the ramp runs between pairs 2 and 4, so pairs of each kind exist), the biased
router (top-2 of 5, softmax over the two), the clamped SwiGLU with interleaved gate/up
columns and expert biases.

`gpt-oss` is saved as transformers writes it (bf16, experts x·W in [E, in, out]).
`gpt-oss-mxfp4` holds OpenAI's release layout: the expert matrices snapped to MXFP4 values
before the reference runs, then stored as `*_blocks` (uint8 [E, out, in/32, 16], low nibble
= element 2j) and `*_scales` (biased exponents) with a quantization_config, as the
released gpt-oss-20b checkpoint stores them; transformers itself reloads that folder
(Mxfp4Config(dequantize=True)) and must give back the recorded logits.
"""
import json

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from transformers import GptOssConfig, GptOssForCausalLM, Mxfp4Config, PreTrainedTokenizerFast

# OpenAI's MXFP4 code points (E2M1) in code order; codes 8..15 are the negatives.
FP4_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])

CONFIG = dict(num_hidden_layers=4, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
              intermediate_size=32, num_local_experts=5, num_experts_per_tok=2, vocab_size=512, sliding_window=8,
              rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=True, max_position_embeddings=131072,
              layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
              rope_parameters=dict(rope_type="yarn", rope_theta=150000.0, factor=32.0, beta_fast=32.0, beta_slow=1.0,
                                   truncate=False, original_max_position_embeddings=4096))


def mxfp4_encode(w):
    """w [rows, cols] (cols % 32 == 0) → (codes uint8 [rows, cols], scales uint8 [rows, cols/32]) with
    value = FP4_VALUES[code] · 2^(scale − 127): per block of 32, the exponent that puts amax in [4, 8)
    (ggml's choice, e = floor(log2 amax) − 2), each element the nearest code point."""
    rows, cols = w.shape
    blocks = w.reshape(rows, cols // 32, 32).double()
    amax = blocks.abs().amax(-1)
    exp = torch.where(amax > 0, torch.floor(torch.log2(amax.clamp_min(1e-30))) - 2, torch.zeros_like(amax))
    exp = exp.clamp(-127, 127)
    scaled = blocks / torch.pow(2.0, exp)[..., None]
    codes = (scaled[..., None] - FP4_VALUES.double()).abs().argmin(-1)
    return codes.reshape(rows, cols).to(torch.uint8), (exp + 127).to(torch.uint8)


def mxfp4_decode(codes, scales):
    rows, cols = codes.shape
    vals = FP4_VALUES[codes.long()].reshape(rows, cols // 32, 32).double()
    return (vals * torch.pow(2.0, scales.double() - 127)[..., None]).reshape(rows, cols)


def pack_blocks(codes):
    """codes [rows, cols] → uint8 [rows, cols/32, 16]: byte j of a block holds element 2j (low
    nibble) and 2j + 1 (high nibble), OpenAI's order."""
    rows, cols = codes.shape
    c = codes.reshape(rows, cols // 32, 16, 2)
    return (c[..., 0] | (c[..., 1] << 4)).to(torch.uint8)


def make_model(mg, gen_seed):
    config = GptOssConfig(**CONFIG, bos_token_id=None, eos_token_id=None)
    torch.manual_seed(0)
    model = GptOssForCausalLM(config).eval()
    gen = torch.Generator().manual_seed(gen_seed)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("sinks"):
                p.copy_(torch.randn(p.shape, generator=gen))
            elif n.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
            elif p.ndim == 1:
                p.copy_(1.0 + torch.randn(p.shape, generator=gen) * 0.1)
            elif "embed_tokens" in n:
                p.copy_(torch.randn(p.shape, generator=gen))
            elif "experts" in n:  # large enough that the ±7 clamps bite on some rows
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.08)
            p.copy_(p.to(torch.bfloat16).to(torch.float32))
    return model


def snap_experts_to_mxfp4(model):
    """Replaces every expert matrix by its MXFP4 rounding (in the [E, out, in] order the blocks are
    stored in); returns per layer and matrix the (codes, scales) in that order."""
    packed = {}
    with torch.no_grad():
        for i, layer in enumerate(model.model.layers):
            ex = layer.mlp.experts
            for name in ("gate_up_proj", "down_proj"):
                p = getattr(ex, name)  # [E, in, out]
                codes, scales = [], []
                for e in range(p.shape[0]):
                    c, s = mxfp4_encode(p[e].T.contiguous())
                    p[e].copy_(mxfp4_decode(c, s).T.to(torch.float32))
                    codes.append(c)
                    scales.append(s)
                packed[(i, name)] = (torch.stack(codes), torch.stack(scales))
    return packed


def clamp_activity(model, input_ids):
    """How often the SwiGLU's clamps bite over the prompt (gate above 7, up beyond ±7), per layer."""
    counts = []
    hooks = []
    for layer in model.model.layers:
        ex = layer.mlp.experts
        orig = ex._apply_gate

        def apply_gate(gate_up, orig=orig):
            g, u = gate_up[..., ::2], gate_up[..., 1::2]
            counts.append(dict(gate=int((g > 7).sum()), up=int((u.abs() > 7).sum()), total=int(g.numel())))
            return orig(gate_up)
        ex._apply_gate = apply_gate
        hooks.append((ex, orig))
    with torch.no_grad():
        model(input_ids=input_ids)
    for ex, orig in hooks:
        ex._apply_gate = orig
    return counts


def make_case(mg, name):
    d = mg.OUT_OTHERS / name
    d.mkdir(parents=True, exist_ok=True)
    mxfp4 = name == "gpt-oss-mxfp4"
    model = make_model(mg, 1234 if not mxfp4 else 4321)
    packed = snap_experts_to_mxfp4(model) if mxfp4 else None
    tok = mg.make_tokenizer(CONFIG["vocab_size"])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>")
    fast.save_pretrained(d)
    input_ids = fast(mg.PROMPT, return_tensors="pt").input_ids
    assert input_ids.shape[1] > 2 * CONFIG["sliding_window"] + 8, input_ids.shape
    logits, hidden = mg.run_reference(model, input_ids)
    clamps = clamp_activity(model, input_ids)
    if not mxfp4:
        mg.save_case(d, model, input_ids, logits, hidden)
    else:
        save_mxfp4(d, model, packed, input_ids, logits, hidden, mg)
    cfg = model.config
    return dict(case=name, arch="GptOssForCausalLM", tied=False, rope=dict(cfg.rope_parameters),
                layers=cfg.num_hidden_layers, hidden=cfg.hidden_size,
                heads=f"{cfg.num_attention_heads}/{cfg.num_key_value_heads} x {cfg.head_dim}",
                ffn=cfg.intermediate_size, vocab=cfg.vocab_size, window=cfg.sliding_window,
                globals=[i for i, t in enumerate(cfg.layer_types) if t == "full_attention"],
                tokens=int(input_ids.shape[1]), max_abs_logit=float(np.abs(logits).max()),
                moe=dict(experts=cfg.num_local_experts, top_k=cfg.num_experts_per_tok, ffn=cfg.intermediate_size,
                         expert_tensors="mxfp4 blocks/scales" if mxfp4 else "x·W [E, in, out], bf16",
                         swiglu_clamps=clamps))


def save_mxfp4(d, model, packed, input_ids, logits, hidden, mg):
    """The bf16 folder with each expert matrix replaced by OpenAI's `*_blocks` / `*_scales`, then a
    reload by transformers with dequantize=True that must reproduce the recorded outputs."""
    model.to(torch.bfloat16).save_pretrained(d)
    tensors = load_file(d / "model.safetensors")
    for (i, name), (codes, scales) in packed.items():
        key = f"model.layers.{i}.mlp.experts.{name}"
        assert key in tensors, key
        del tensors[key]
        tensors[key + "_blocks"] = torch.stack([pack_blocks(c) for c in codes])
        tensors[key + "_scales"] = scales
    save_file(tensors, d / "model.safetensors", metadata={"format": "pt"})
    cfg = json.loads((d / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "mxfp4",
                                  "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                             "model.embed_tokens", "lm_head"]}
    (d / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    np.save(d / "tokens.npy", input_ids[0].numpy().astype(np.int32))
    np.save(d / "logits.npy", logits.astype(np.float32))
    np.save(d / "hidden_states.npy", hidden.astype(np.float32))
    (d / "prompt.txt").write_text(mg.PROMPT, encoding="utf-8")
    again = GptOssForCausalLM.from_pretrained(d, dtype=torch.float32, use_kernels=False,
                                              quantization_config=Mxfp4Config(dequantize=True)).eval()
    again.float()
    with torch.no_grad():
        out = again(input_ids=input_ids)
    err = mg.relative_error(out.logits[0].float().numpy(), logits)
    assert err <= 1e-5, (d, err)


CASES = ("gpt-oss", "gpt-oss-mxfp4")


def make_cases(mg, only):
    return [make_case(mg, n) for n in CASES if not only or n in only]
