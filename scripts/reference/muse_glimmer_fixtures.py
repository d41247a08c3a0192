"""scripts/reference/muse_glimmer_fixtures.py — run by scripts/make-muse-glimmer-fixtures
(which sets up the venv). Builds tiny random-weight Muse Glimmer checkpoints with the
reference implementation (transformers' MuseGlimmerForConditionalGeneration), saves them
as Hugging Face folders and records the reference's outputs on a prompt longer than the
sliding window, so that NoPE global layers and wrapping local windows are both exercised.

Weights are stored as bf16 (small files) and the reference runs in float32 on exactly
those bf16 values, so a float32 port can match it to float32 rounding. Every norm weight
is random (the four per-layer norms scale by 1 + w, the final norm by w): a converter that
forgets or misplaces the +1 would show.
"""
import copy
import json
import os
import pathlib
import sys

import numpy as np
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM, MuseGlimmerConfig,
                          MuseGlimmerForConditionalGeneration, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM,
                          Qwen3Config, Qwen3ForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM)

import dflash_fixture
import gpt_oss_fixtures
import vision_fixture
import muse_glimmer_numpy

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
OUT = ROOT / "tests" / "fixtures" / "muse_glimmer"
OUT_OTHERS = ROOT / "tests" / "fixtures" / "hf_tiny"  # llama, gemma3, qwen2, qwen3, qwen3moe, gpt-oss: convert's cross-checks

SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start|>", "<|message|>", "<|eom|>", "<|eot|>", "<|patch|>",
            "<|image_start|>", "<|image_end|>", "<|video|>", "<|mask|>"]

CORPUS = """\
The keeper of the lighthouse climbed the winding stairs each evening, counted the steps, and
wound the great clock before the sun went down. Ships passed in the night; some signalled,
some did not. In the morning he wrote the weather in a small book: wind from the west, 12
knots, rain after 3 o'clock, a fishing boat named Maria seen at 06:40.
Agents read screenshots, click buttons, type into fields and call tools such as
get_weather(city="Paris", days=2) or search(query="tide tables"). They think first, then
answer the user. Numbers like 3.14159, 2048 and 131072 appear in logs; so do paths such as
/usr/share/doc and URLs like https://example.org/a?b=c.
Il fait beau aujourd'hui. Das Wetter ist schön. 今日は晴れです。 Сегодня хорошая погода.
"""

PROMPT = ("The keeper climbed the stairs and counted 2048 steps; the agent called get_weather(city=\"Paris\") "
          "while ships passed in the night, and the book said: wind from the west, rain after 3.")

# name → (text config, window, vocab). Shapes as in tests/fixtures/muse_glimmer/README.md.
CASES = {
    "tiny": dict(num_hidden_layers=6, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                 intermediate_size=128, vocab_size=512, sliding_window=8, rope_theta=10000.0),
    "tiny-gqa4": dict(num_hidden_layers=5, hidden_size=64, num_attention_heads=8, num_key_value_heads=2, head_dim=8,
                      intermediate_size=96, vocab_size=512, sliding_window=5, rope_theta=500000.0,
                      qk_scale_factor=2.5, output_multiplier=1.5, final_logit_softcapping=6.0, rms_norm_eps=1e-6),
    "wide": dict(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, num_key_value_heads=1, head_dim=64,
                 intermediate_size=256, vocab_size=512, sliding_window=16, rope_theta=500000.0),
}


def make_tokenizer(vocab_size):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - len(SPECIALS), initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator([CORPUS], trainer)
    tok.add_special_tokens(SPECIALS)
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", bos)])
    return tok


def randomise(model, gen):
    """Matrices N(0, 0.08²) (embeddings N(0, 1), the head N(0, 0.5²)); the per-layer norms' w around 0 (they scale
    by 1 + w), the final norm's around 1 (it scales by w)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layernorm.weight"):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
            elif p.ndim == 1:
                p.copy_(1.0 + torch.randn(p.shape, generator=gen) * 0.1)
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            elif name == "lm_head.weight":  # logits of a few units, so the soft-cap bends them
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.08)
            p.copy_(p.to(torch.bfloat16).to(torch.float32))  # the values the bf16 file holds


def q8_noise_sensitivity(model, input_ids, logits):
    """How far the reference itself moves when its text matrices get Q8_0-sized rounding
    noise (uniform, a step of max|block of 32| / 127): the scale against which squeeze's
    quantized files are judged (max and median over positions of max |Δ| / max |ref|)."""
    noisy = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for n, p in noisy.named_parameters():
            if p.ndim == 2 and ("language_model" in n or n == "lm_head.weight"):
                w = p.view(-1, 32)
                step = w.abs().amax(1, keepdim=True) / 127
                p.copy_((w + (torch.rand(w.shape, generator=gen) - 0.5) * step).view(p.shape))
        out = noisy(input_ids=input_ids).logits[0].float().numpy()
    e = np.abs(out - logits).max(1) / np.abs(logits).max(1)
    return {"max": float(e.max()), "median": float(np.median(e))}


def relative_error(ours, ref):
    """The consumers' measure: max over positions of max |Δ| / max |reference| (row-wise)."""
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    return float((np.abs(ours - ref).max(-1) / np.abs(ref).max(-1)).max())


def check_saved(d, model_cls, input_ids, logits, hidden):
    """The folder as written must give back what was recorded: reloading it (bf16 → f32) is
    the same model, so any difference means the file does not hold the weights the
    reference ran on. from_pretrained defaults to use_kernels=True in 5.25 and then fails
    without the `kernels` package (Python >= 3.12), hence use_kernels=False."""
    again = model_cls.from_pretrained(d, dtype=torch.float32, use_kernels=False).eval()
    with torch.no_grad():
        out = again(input_ids=input_ids, output_hidden_states=True)
    assert relative_error(out.logits[0].numpy(), logits) <= 1e-6, d
    assert relative_error(torch.stack(out.hidden_states)[:, 0].numpy(), hidden) <= 1e-6, d


def run_reference(model, input_ids):
    """The reference's float32 logits [n, vocab] and hidden states [layers + 1, n, hidden]."""
    with torch.no_grad():
        out = model(input_ids=input_ids, output_hidden_states=True)
    return out.logits[0].float().numpy(), torch.stack(out.hidden_states)[:, 0].float().numpy()


def save_case(d, model, input_ids, logits, hidden, save_original_format=True):
    """The checkpoint (bf16: the values the reference ran on) and the recorded outputs,
    then a reload of the folder that must reproduce them. save_original_format=False keeps
    transformers 5's in-memory names and layouts (for MoE: fused 3-D expert tensors) instead
    of the per-expert layout that published checkpoints use and save_pretrained writes by default."""
    model.to(torch.bfloat16).save_pretrained(d, save_original_format=save_original_format)
    np.save(d / "tokens.npy", input_ids[0].numpy().astype(np.int32))
    np.save(d / "logits.npy", logits.astype(np.float32))
    np.save(d / "hidden_states.npy", hidden.astype(np.float32))
    (d / "prompt.txt").write_text(PROMPT, encoding="utf-8")
    check_saved(d, type(model), input_ids, logits, hidden)


def make_case(name, text):
    d = OUT / name
    d.mkdir(parents=True, exist_ok=True)
    vocab = text["vocab_size"]
    tok = make_tokenizer(vocab)
    theta = text.pop("rope_theta")
    ids = {s: tok.token_to_id(s) for s in SPECIALS}
    text_config = dict(text, rope_parameters={"rope_type": "default", "rope_theta": theta},
                       bos_token_id=ids["<|begin_of_text|>"], eos_token_id=ids["<|end_of_text|>"],
                       max_position_embeddings=512)
    # The smallest vision tower the reference builds: convert leaves it out of the text GGUF.
    vision_config = dict(num_hidden_layers=1, hidden_size=32, intermediate_size=64, num_attention_heads=2,
                         patch_size=14, pos_emb_height=4, pos_emb_width=4, max_position_embeddings=16)
    config = MuseGlimmerConfig(text_config=text_config, vision_config=vision_config, out_hidden_size=128,
                               projector_hidden_size=64, image_token_id=ids["<|patch|>"], video_token_id=ids["<|video|>"])
    torch.manual_seed(0)
    model = MuseGlimmerForConditionalGeneration(config).eval()
    randomise(model, torch.Generator().manual_seed(1234))

    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>")
    fast.save_pretrained(d)
    input_ids = fast(PROMPT, return_tensors="pt").input_ids
    assert input_ids.shape[1] > 2 * text["sliding_window"] + 8, input_ids.shape

    logits, hidden = run_reference(model, input_ids)
    sensitivity = q8_noise_sensitivity(model, input_ids, logits)
    save_case(d, model, input_ids, logits, hidden)
    # The README's facts about the reference, re-derived: a float64 numpy pass over the
    # saved file must land within f32 rounding of transformers' float32 outputs.
    np_logits, np_hidden = muse_glimmer_numpy.forward(d, input_ids[0].tolist())
    independent = {"logits": relative_error(np_logits, logits), "hidden_states": relative_error(np_hidden, hidden)}
    assert max(independent.values()) <= 1e-4, (name, independent)
    cfg = config.text_config
    return dict(case=name, layers=cfg.num_hidden_layers, hidden=cfg.hidden_size,
                heads=f"{cfg.num_attention_heads}/{cfg.num_key_value_heads} x {cfg.head_dim}",
                ffn=cfg.intermediate_size, vocab=cfg.vocab_size, window=cfg.sliding_window,
                globals=[i for i, t in enumerate(cfg.layer_types) if t == "full_attention"],
                tokens=int(input_ids.shape[1]), max_abs_logit=float(np.abs(logits).max()),
                reference_under_q8_noise=sensitivity, numpy_float64_vs_reference=independent)


def moe_routing(model, input_ids):
    """Per sparse layer: tokens per expert among the top-k picks, the number of distinct top-k sets
    over the prompt, and the smallest gap between the k-th and (k+1)-th router probability (how far
    every routing decision is from a tie). Recomputed here from the router logits as transformers
    5.25 does it: softmax in float32 over all experts, then top-k (then ÷ their sum if norm_topk_prob)."""
    cfg = model.config
    with torch.no_grad():
        out = model(input_ids=input_ids, output_router_logits=True)
    sparse = [i for i, layer in enumerate(model.model.layers) if hasattr(layer.mlp, "experts")]
    assert len(out.router_logits) == len(sparse), (len(out.router_logits), sparse)
    rows = []
    for i, r in zip(sparse, out.router_logits):
        probs = torch.softmax(r.float(), dim=-1)
        top = torch.topk(probs, cfg.num_experts_per_tok + 1, dim=-1)
        picks = top.indices[:, :cfg.num_experts_per_tok]
        rows.append(dict(layer=i, tokens_per_expert=torch.bincount(picks.reshape(-1), minlength=cfg.num_experts).tolist(),
                         distinct_topk_sets=len({tuple(sorted(t)) for t in picks.tolist()}),
                         min_topk_gap=float((top.values[:, -2] - top.values[:, -1]).min())))
    return rows


def make_other(name, model_cls, config_cls, text):
    """A tiny llama / gemma3 / qwen / qwen3-moe checkpoint with the same tokenizer and the same recorded outputs."""
    d = OUT_OTHERS / name
    d.mkdir(parents=True, exist_ok=True)
    tok = make_tokenizer(text["vocab_size"])
    ids = {s: tok.token_to_id(s) for s in SPECIALS}
    config = config_cls(**text, bos_token_id=ids["<|begin_of_text|>"], eos_token_id=ids["<|end_of_text|>"],
                        max_position_embeddings=512)
    torch.manual_seed(0)
    model = model_cls(config).eval()
    # Gemma's norms scale by 1 + w (w around 0); llama's by w (around 1).
    gen = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith(".bias"):  # Qwen2's Q/K/V biases
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
            elif p.ndim == 1:
                p.copy_((0.0 if name == "gemma3" else 1.0) + torch.randn(p.shape, generator=gen) * 0.1)
            elif "embed_tokens" in n:
                p.copy_(torch.randn(p.shape, generator=gen) * (0.125 if name == "gemma3" else 1.0))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.08)
            p.copy_(p.to(torch.bfloat16).to(torch.float32))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>")
    fast.save_pretrained(d)
    input_ids = fast(PROMPT, return_tensors="pt").input_ids
    logits, hidden = run_reference(model, input_ids)
    moe = None
    if model_cls is Qwen3MoeForCausalLM:
        moe = dict(experts=config.num_experts, top_k=config.num_experts_per_tok, ffn=config.moe_intermediate_size,
                   norm_topk_prob=bool(config.norm_topk_prob), decoder_sparse_step=config.decoder_sparse_step,
                   mlp_only_layers=list(config.mlp_only_layers),
                   sparse_layers=[i for i, layer in enumerate(model.model.layers) if hasattr(layer.mlp, "experts")],
                   expert_tensors="fused" if name in FUSED_EXPERTS else "per-expert",
                   config_key="num_experts" if name in CONFIG_NUM_EXPERTS else "num_local_experts",
                   routing=moe_routing(model, input_ids))
        assert all(r["distinct_topk_sets"] > 1 for r in moe["routing"]), moe["routing"]
    save_case(d, model, input_ids, logits, hidden, save_original_format=name not in FUSED_EXPERTS)
    if name in CONFIG_NUM_EXPERTS:  # as published Qwen3-MoE checkpoints spell it (5.25 writes num_local_experts)
        cfg = json.loads((d / "config.json").read_text())
        cfg["num_experts"] = cfg.pop("num_local_experts")
        (d / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
        check_saved(d, model_cls, input_ids, logits, hidden)
    return dict(case=name, arch=model_cls.__name__, tied=bool(config.tie_word_embeddings),
                rope=dict(config.rope_parameters) if name != "gemma3" else None,
                layers=config.num_hidden_layers, hidden=config.hidden_size,
                heads=f"{config.num_attention_heads}/{config.num_key_value_heads} x "
                      f"{getattr(config, 'head_dim', None) or config.hidden_size // config.num_attention_heads}",
                ffn=config.intermediate_size, vocab=config.vocab_size,
                window=getattr(config, "sliding_window", None) if name == "gemma3" else None,
                globals=([i for i, t in enumerate(config.layer_types) if t == "full_attention"] if name == "gemma3"
                         else list(range(config.num_hidden_layers))),
                tokens=int(input_ids.shape[1]), max_abs_logit=float(np.abs(logits).max()),
                **({"moe": moe} if moe else {}))


OTHERS = {
    "llama": (LlamaForCausalLM, LlamaConfig,
              dict(num_hidden_layers=3, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                   intermediate_size=128, vocab_size=512, rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)),
    "gemma3": (Gemma3ForCausalLM, Gemma3TextConfig,
               dict(num_hidden_layers=4, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                    intermediate_size=128, vocab_size=512, sliding_window=8, query_pre_attn_scalar=16,
                    layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
                    rms_norm_eps=1e-6, final_logit_softcapping=None)),
    # Llama 3.x's RoPE scaling with a short original context, so that the 75-token prompt
    # crosses all three bands (unscaled, blended, divided by the factor); tied head.
    "llama3-tied": (LlamaForCausalLM, LlamaConfig,
                    dict(num_hidden_layers=3, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                         intermediate_size=128, vocab_size=512, rms_norm_eps=1e-5, tie_word_embeddings=True,
                         rope_parameters=dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0,
                                              high_freq_factor=4.0, original_max_position_embeddings=32))),
    "llama-linear": (LlamaForCausalLM, LlamaConfig,
                     dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=4, head_dim=16,
                          intermediate_size=128, vocab_size=512, rms_norm_eps=1e-5, tie_word_embeddings=False,
                          rope_parameters=dict(rope_type="linear", rope_theta=10000.0, factor=4.0))),
    "qwen2": (Qwen2ForCausalLM, Qwen2Config,
              dict(num_hidden_layers=3, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                   intermediate_size=128, vocab_size=512, rms_norm_eps=1e-6, tie_word_embeddings=True,
                   rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    "qwen3": (Qwen3ForCausalLM, Qwen3Config,
              dict(num_hidden_layers=3, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                   intermediate_size=128, vocab_size=512, rms_norm_eps=1e-6, tie_word_embeddings=False,
                   rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    "qwen3-tied": (Qwen3ForCausalLM, Qwen3Config,
                   dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=8, num_key_value_heads=2, head_dim=16,
                        intermediate_size=96, vocab_size=512, rms_norm_eps=1e-6, tie_word_embeddings=True,
                        rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    # Qwen3-MoE: 6 experts (not a power of two), top-3 renormalised; layer 2 a dense MLP among sparse ones.
    "qwen3moe": (Qwen3MoeForCausalLM, Qwen3MoeConfig,
                 dict(num_hidden_layers=4, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                      intermediate_size=96, moe_intermediate_size=32, num_experts=6, num_experts_per_tok=3,
                      norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[2], vocab_size=512,
                      rms_norm_eps=1e-6, tie_word_embeddings=False,
                      rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    # Top-3 of 5 without renormalisation; decoder_sparse_step 2: only layer 1 sparse ((i + 1) % 2 == 0).
    "qwen3moe-nonorm": (Qwen3MoeForCausalLM, Qwen3MoeConfig,
                        dict(num_hidden_layers=3, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                             head_dim=16, intermediate_size=96, moe_intermediate_size=32, num_experts=5,
                             num_experts_per_tok=3, norm_topk_prob=False, decoder_sparse_step=2, mlp_only_layers=[],
                             vocab_size=512, rms_norm_eps=1e-6, tie_word_embeddings=False,
                             rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    # Every layer sparse, gates renormalised: the layout llama.cpp's qwen3moe runs (it has no
    # dense layers among expert ones and always renormalises), for the llama.cpp agreement.
    "qwen3moe-all": (Qwen3MoeForCausalLM, Qwen3MoeConfig,
                     dict(num_hidden_layers=3, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                          head_dim=16, intermediate_size=96, moe_intermediate_size=32, num_experts=6,
                          num_experts_per_tok=4, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
                          vocab_size=512, rms_norm_eps=1e-6, tie_word_embeddings=False,
                          rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
}
# MoE cases saved with transformers 5's fused expert tensors (experts.gate_up_proj [E, 2I, d],
# experts.down_proj [E, d, I]) instead of the default per-expert experts.E.{gate,up,down}_proj.weight.
FUSED_EXPERTS = {"qwen3moe-nonorm"}
# MoE cases whose config.json says num_experts (as Qwen's checkpoints do) instead of 5.25's num_local_experts.
CONFIG_NUM_EXPERTS = {"qwen3moe", "qwen3moe-all"}


def main():
    torch.set_num_threads(2)
    only = sys.argv[1:]
    rows = [make_case(n, dict(c)) for n, c in CASES.items() if not only or n in only]
    others = [make_other(n, m, c, dict(t)) for n, (m, c, t) in OTHERS.items() if not only or n in only]
    others += gpt_oss_fixtures.make_cases(sys.modules[__name__], only)
    all_others = list(OTHERS) + list(gpt_oss_fixtures.CASES)
    for r in others:
        print(r)
    if not only or "dflash" in only:
        print(dflash_fixture.make_dflash_case())
    if not only or "vision" in only:
        print(vision_fixture.make_vision_case())
    versions = {"torch": torch.__version__, "transformers": transformers.__version__}
    if len(rows) == len(CASES):  # a partial run leaves the table of all cases as it was
        (OUT / "cases.json").write_text(json.dumps({"versions": versions, "cases": rows}, indent=1) + "\n")
    if others:  # a partial run replaces (or appends) only the rows of the cases it made
        path = OUT_OTHERS / "cases.json"
        old = json.loads(path.read_text())["cases"] if path.exists() and len(others) < len(all_others) else []
        new = {r["case"]: r for r in others}
        merged = [new.pop(r["case"], r) for r in old] + [new[n] for n in all_others if n in new]
        path.write_text(json.dumps({"versions": versions, "cases": merged}, indent=1) + "\n")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
