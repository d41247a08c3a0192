"""tests/python/test_train_reference.py — the training model's loss and every gradient
against an independent float64 numpy implementation (forward and hand-written backward),
on a tiny glimmer config ([L L L G], GQA 4/2, window 3 < sequence 9, an ignored target),
tied and untied. Our side comes from the test tool tests/train/train_dump (via
SQUEEZE_BUILD); the weights are read back from our GGUF with the gguf package. The
numpy backward is itself checked against central finite differences on sampled entries.
"""
import os
import subprocess

import numpy as np
import pytest
from gguf import GGUFReader

BUILD = os.environ.get("SQUEEZE_BUILD", "build/release")
TOOL = os.path.join(BUILD, "tests", "train", "train_dump")


def load(dirname):
    meta = {}
    for line in open(os.path.join(dirname, "meta.txt")):
        k, *v = line.split()
        meta[k] = [float(x) for x in v] if k == "is_local" else float(v[0])
    reader = GGUFReader(os.path.join(dirname, "model.gguf"))
    weights = {t.name: np.array(t.data, dtype=np.float64) for t in reader.tensors}
    tokens = np.fromfile(os.path.join(dirname, "tokens.i32"), dtype="<i4")
    targets = np.fromfile(os.path.join(dirname, "targets.i32"), dtype="<i4")
    grads = {name: np.fromfile(os.path.join(dirname, f"grad.{name}.f32"), dtype="<f4").reshape(w.shape)
             for name, w in weights.items()}
    return meta, weights, tokens, targets, grads


class Model:
    """Forward with a cache of intermediates; backward by hand (no autodiff library)."""

    def __init__(self, meta):
        self.m = meta
        self.L = int(meta["n_layer"])
        self.H, self.Hk, self.D = int(meta["n_head"]), int(meta["n_head_kv"]), int(meta["head_dim"])
        self.S, self.B = int(meta["seq_len"]), int(meta["batch"])
        self.eps = meta["rms_eps"]
        self.local = [bool(x) for x in meta["is_local"]]

    # --- pieces ---------------------------------------------------------------
    def rope_tables(self, base):
        i = np.arange(self.D // 2)
        theta = np.arange(self.S)[:, None] * base ** (-2.0 * i / self.D)[None, :]
        return np.cos(theta), np.sin(theta)  # [S, D/2]

    def rope(self, x, nh, base, inverse=False):
        c, s = self.rope_tables(base)
        if inverse:
            s = -s
        x = x.reshape(self.B, self.S, nh, self.D // 2, 2)
        c, s = c[None, :, None, :], s[None, :, None, :]
        y = np.empty_like(x)
        y[..., 0] = x[..., 0] * c - x[..., 1] * s
        y[..., 1] = x[..., 0] * s + x[..., 1] * c
        return y.reshape(self.B * self.S, nh * self.D)

    def mask(self, window):
        i, j = np.arange(self.S)[:, None], np.arange(self.S)[None, :]
        ok = j <= i
        if window > 0:
            ok &= j > i - window
        return ok

    def rmsnorm(self, x, w):
        r = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps)
        return x * r * w, r

    def rmsnorm_back(self, x, w, r, dy):
        E = x.shape[-1]
        dw = (dy * x * r).sum(0)
        dx = r * w * dy - x * r ** 3 / E * (dy * w * x).sum(-1, keepdims=True)
        return dx, dw

    # --- whole model ----------------------------------------------------------
    def loss_and_grads(self, W, tokens, targets, want_grads=True):
        H, Hk, D, B, S = self.H, self.Hk, self.D, self.B, self.S
        G = H // Hk
        hmap = np.arange(H) // G
        scale = 1.0 / np.sqrt(D)
        emb = W["token_embd.weight"]
        x = emb[tokens]
        caches = []
        for il in range(self.L):
            p = f"blk.{il}."
            base = self.m["rope_base_local"] if self.local[il] else self.m["rope_base_global"]
            window = int(self.m["window"]) if self.local[il] else 0
            c = {"x_in": x, "base": base, "window": window}
            h, c["r1"] = self.rmsnorm(x, W[p + "attn_norm.weight"])
            c["h"] = h
            q = self.rope(h @ W[p + "attn_q.weight"].T, H, base)
            k = self.rope(h @ W[p + "attn_k.weight"].T, Hk, base)
            v = h @ W[p + "attn_v.weight"].T
            q4 = q.reshape(B, S, H, D)
            ke = k.reshape(B, S, Hk, D)[:, :, hmap]
            ve = v.reshape(B, S, Hk, D)[:, :, hmap]
            sc = np.einsum("bihd,bjhd->bhij", q4, ke) * scale
            sc = np.where(self.mask(window), sc, -np.inf)
            P = np.exp(sc - sc.max(-1, keepdims=True))
            P /= P.sum(-1, keepdims=True)
            a = np.einsum("bhij,bjhd->bihd", P, ve).reshape(B * S, H * D)
            c.update(q4=q4, ke=ke, ve=ve, P=P, a=a)
            x = x + a @ W[p + "attn_output.weight"].T
            c["x_mid"] = x
            h2, c["r2"] = self.rmsnorm(x, W[p + "ffn_norm.weight"])
            g = h2 @ W[p + "ffn_gate.weight"].T
            u = h2 @ W[p + "ffn_up.weight"].T
            sg = 1.0 / (1.0 + np.exp(-g))
            act = g * sg * u
            c.update(h2=h2, g=g, u=u, sg=sg, act=act)
            x = x + act @ W[p + "ffn_down.weight"].T
            caches.append(c)
        hf, rf = self.rmsnorm(x, W["output_norm.weight"])
        out_w = emb if "output.weight" not in W else W["output.weight"]
        logits = hf @ out_w.T
        valid = targets >= 0
        n_valid = valid.sum()
        lse = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
        rows = np.nonzero(valid)[0]
        loss = (lse[rows] - logits[rows, targets[rows]]).sum() / n_valid
        if not want_grads:
            return loss, None

        dW = {name: np.zeros_like(w) for name, w in W.items()}
        dlogits = np.exp(logits - lse[:, None])
        dlogits[rows, targets[rows]] -= 1.0
        dlogits[~valid] = 0.0
        dlogits /= n_valid
        d_out_w = dlogits.T @ hf
        if "output.weight" in W:
            dW["output.weight"] += d_out_w
        else:
            dW["token_embd.weight"] += d_out_w
        dhf = dlogits @ out_w
        dx, dW["output_norm.weight"] = self.rmsnorm_back(x, W["output_norm.weight"], rf, dhf)
        for il in reversed(range(self.L)):
            p, c = f"blk.{il}.", caches[il]
            # ffn
            dW[p + "ffn_down.weight"] += dx.T @ c["act"]
            dact = dx @ W[p + "ffn_down.weight"]
            g, u, sg = c["g"], c["u"], c["sg"]
            du = dact * g * sg
            dg = dact * u * sg * (1 + g * (1 - sg))
            dW[p + "ffn_gate.weight"] += dg.T @ c["h2"]
            dW[p + "ffn_up.weight"] += du.T @ c["h2"]
            dh2 = dg @ W[p + "ffn_gate.weight"] + du @ W[p + "ffn_up.weight"]
            dxm, dW[p + "ffn_norm.weight"] = self.rmsnorm_back(c["x_mid"], W[p + "ffn_norm.weight"], c["r2"], dh2)
            dx = dx + dxm
            # attention
            dW[p + "attn_output.weight"] += dx.T @ c["a"]
            da = (dx @ W[p + "attn_output.weight"]).reshape(B, S, H, D)
            P, q4, ke, ve = c["P"], c["q4"], c["ke"], c["ve"]
            dP = np.einsum("bihd,bjhd->bhij", da, ve)
            dsc = P * (dP - (dP * P).sum(-1, keepdims=True))
            dq = np.einsum("bhij,bjhd->bihd", dsc, ke) * scale
            dke = np.einsum("bhij,bihd->bjhd", dsc, q4) * scale
            dve = np.einsum("bhij,bihd->bjhd", P, da)
            dk = np.zeros((B, S, Hk, D))
            dv = np.zeros((B, S, Hk, D))
            for h in range(H):
                dk[:, :, hmap[h]] += dke[:, :, h]
                dv[:, :, hmap[h]] += dve[:, :, h]
            dq = self.rope(dq.reshape(B * S, H * D), H, c["base"], inverse=True)
            dk = self.rope(dk.reshape(B * S, Hk * D), Hk, c["base"], inverse=True)
            dv = dv.reshape(B * S, Hk * D)
            h = c["h"]
            dW[p + "attn_q.weight"] += dq.T @ h
            dW[p + "attn_k.weight"] += dk.T @ h
            dW[p + "attn_v.weight"] += dv.T @ h
            dh = dq @ W[p + "attn_q.weight"] + dk @ W[p + "attn_k.weight"] + dv @ W[p + "attn_v.weight"]
            dxn, dW[p + "attn_norm.weight"] = self.rmsnorm_back(c["x_in"], W[p + "attn_norm.weight"], c["r1"], dh)
            dx = dx + dxn
        np.add.at(dW["token_embd.weight"], tokens, dx)
        return loss, dW


def dump(tmp_path, mode):
    if not os.path.exists(TOOL):
        pytest.skip(f"{TOOL} is not built")
    r = subprocess.run([TOOL, str(tmp_path), mode], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return load(tmp_path)


@pytest.mark.parametrize("mode", ["tied", "untied"])
def test_loss_and_all_gradients_match_numpy(tmp_path, mode):
    meta, W, tokens, targets, ours = dump(tmp_path, mode)
    assert ("output.weight" in W) == (mode == "untied")
    model = Model(meta)
    loss, ref = model.loss_and_grads(W, tokens, targets)
    # Our loss is f32 from f32 activations through 4 layers: ~1e-6 relative error; the
    # value printed in meta.txt has 6 significant digits.
    assert abs(meta["loss"] - loss) <= 1e-5 * abs(loss), (meta["loss"], loss)
    assert set(ours) == set(ref)
    for name in ref:
        r, o = ref[name], ours[name].astype(np.float64)
        scale = np.abs(r).max()
        assert scale > 0, f"{name}: reference gradient is zero"
        # f32 rounding accumulates over reductions of ≤ 270 terms and 4 layers of
        # backward: ~1e-6..1e-5 of the tensor's largest gradient. 1e-4 leaves margin,
        # while a wrong term in a backward formula is O(scale).
        err = np.abs(o - r).max()
        assert err <= 1e-4 * scale, f"{name}: max |ours - numpy| = {err:.3g}, scale {scale:.3g}"


def test_numpy_backward_matches_finite_differences(tmp_path):
    """The reference itself: sampled entries of every tensor against central differences."""
    meta, W, tokens, targets, _ = dump(tmp_path, "untied")
    model = Model(meta)
    _, ref = model.loss_and_grads(W, tokens, targets)
    rng = np.random.default_rng(0)
    h = 1e-6
    for name, w in W.items():
        for idx in [tuple(rng.integers(0, s) for s in w.shape) for _ in range(2)]:
            if name == "token_embd.weight":
                idx = (int(tokens[rng.integers(0, len(tokens))]),) + idx[1:]  # a row that is used
            Wp = {k: v.copy() for k, v in W.items()}
            Wm = {k: v.copy() for k, v in W.items()}
            Wp[name][idx] += h
            Wm[name][idx] -= h
            num = (model.loss_and_grads(Wp, tokens, targets, False)[0] -
                   model.loss_and_grads(Wm, tokens, targets, False)[0]) / (2 * h)
            # float64 central differences: truncation ~h², rounding ~1e-16/h = 1e-10.
            assert abs(num - ref[name][idx]) <= 1e-6 * max(1.0, abs(num)), (name, idx, num, ref[name][idx])
