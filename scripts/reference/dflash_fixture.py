"""scripts/reference/dflash_fixture.py — a tiny random DFlash drafter made with the reference
implementation (transformers' MuseGlimmerAssistantModel), written as a GGUF in llama.cpp's
`dflash` layout, and the reference's output on one block; run by
scripts/make-muse-glimmer-fixtures (case `dflash`), checked by tests/model/test_drafter.cpp.

The drafter has a sliding window (6) shorter than the context (20 positions) and than the
block (8), so both the context window and the in-block window are exercised; three taps;
random norm weights. The reference runs in float32 with eager attention and a DFlashCache
told how many context rows the call carries, as its generation loop does.
"""
import json
import pathlib

import gguf
import numpy as np
import torch
from transformers import MuseGlimmerAssistantConfig, MuseGlimmerAssistantModel

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
OUT = ROOT / "tests" / "fixtures" / "dflash" / "tiny"

CONFIG = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-5, sliding_window=6, block_size=8,
              mask_token_id=5, target_layer_ids=[0, 2, 4], max_position_embeddings=4096,
              rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
CONTEXT = 20


def gguf_name(name):
    """HF parameter name → the dflash GGUF tensor name."""
    fixed = {"encoder.fc.weight": "fc.weight", "encoder.output_norm_enc.weight": "enc.output_norm.weight",
             "norm.weight": "output_norm.weight"}
    if name in fixed:
        return fixed[name]
    parts = name.split(".")  # layers.N.<module>.<param>.weight
    layer, rest = parts[1], ".".join(parts[2:])
    per_layer = {"input_layernorm.weight": "attn_norm", "self_attn.q_proj.weight": "attn_q",
                 "self_attn.k_proj.weight": "attn_k", "self_attn.v_proj.weight": "attn_v",
                 "self_attn.o_proj.weight": "attn_output", "self_attn.q_norm.weight": "attn_q_norm",
                 "self_attn.k_norm.weight": "attn_k_norm", "post_attention_layernorm.weight": "ffn_norm",
                 "mlp.gate_proj.weight": "ffn_gate", "mlp.up_proj.weight": "ffn_up", "mlp.down_proj.weight": "ffn_down"}
    return f"blk.{layer}.{per_layer[rest]}.weight"


def write_gguf(path, cfg, model):
    w = gguf.GGUFWriter(str(path), "dflash")
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_key_length(cfg.head_dim)
    w.add_value_length(cfg.head_dim)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    w.add_sliding_window(cfg.sliding_window)
    w.add_array("dflash.attention.sliding_window_pattern", [t == "sliding_attention" for t in cfg.layer_types])
    w.add_uint32("dflash.block_size", cfg.block_size)
    w.add_uint32("dflash.mask_token_id", cfg.mask_token_id)
    w.add_array("dflash.target_layers", [i + 1 for i in cfg.target_layer_ids])  # stored + 1, as llama.cpp
    for name, p in model.state_dict().items():
        w.add_tensor(gguf_name(name), p.detach().float().numpy())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def make_dflash_case():
    torch.manual_seed(11)
    cfg = MuseGlimmerAssistantConfig(**CONFIG)
    cfg._attn_implementation = "eager"
    model = MuseGlimmerAssistantModel(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or "norm_enc" in name:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / p.shape[-1] ** 0.5)
    from transformers.cache_utils import DFlashCache
    gen = torch.Generator().manual_seed(12)
    n_taps = len(cfg.target_layer_ids)
    context = torch.randn(1, CONTEXT, n_taps * cfg.hidden_size, generator=gen)
    noise = torch.randn(1, cfg.block_size, cfg.hidden_size, generator=gen)
    cache = DFlashCache(config=cfg)
    cache.set_previous_accepted_tokens(CONTEXT)
    with torch.no_grad():
        out = model(noise_embeds=noise, context_hidden_states=context,
                    position_ids=torch.arange(CONTEXT + cfg.block_size)[None], cache=cache)
    hidden = out.last_hidden_state[0].numpy()
    OUT.mkdir(parents=True, exist_ok=True)
    write_gguf(OUT / "drafter.gguf", cfg, model)
    np.save(OUT / "context.npy", context[0].numpy().astype(np.float32))
    np.save(OUT / "noise_embeds.npy", noise[0].numpy().astype(np.float32))
    np.save(OUT / "hidden.npy", hidden.astype(np.float32))
    meta = {"config": CONFIG, "context_positions": CONTEXT, "max_abs_hidden": float(np.abs(hidden).max())}
    (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return {"case": "dflash/tiny", **meta}


if __name__ == "__main__":
    print(make_dflash_case())
