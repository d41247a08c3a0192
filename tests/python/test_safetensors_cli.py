"""tests/python/test_safetensors_cli.py — `squeeze inspect X.safetensors` against files
written here independently (numpy arrays, a JSON header, the format's 8-byte length),
in the layout Hugging Face checkpoints use; malformed files get one line and exit 1."""
import json
import os
import struct
import subprocess

import numpy as np
import pytest

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")


def write_safetensors(path, tensors, metadata=None, pad=0):
    """tensors: name → (dtype name, numpy array). Data in the given order, packed."""
    header, blobs, at = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, arr) in tensors.items():
        raw = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    text = json.dumps(header).encode() + b" " * pad
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return header


def inspect_json(path):
    r = subprocess.run([SQ, "inspect", str(path), "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_inspect_lists_what_was_written(tmp_path):
    rng = np.random.default_rng(3)
    tensors = {
        "model.embed_tokens.weight": ("BF16", (rng.standard_normal((7, 5)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)),
        "model.layers.0.self_attn.q_proj.weight": ("F16", rng.standard_normal((5, 5)).astype(np.float16)),
        "model.norm.weight": ("F32", rng.standard_normal(5).astype(np.float32)),
        "step": ("I64", np.array(12, dtype=np.int64)),
        "mask": ("BOOL", np.array([True, False, True])),
    }
    path = tmp_path / "model.safetensors"
    header = write_safetensors(path, tensors, metadata={"format": "pt"}, pad=5)
    j = inspect_json(path)
    assert j["format"] == "safetensors"
    assert j["metadata"] == {"format": "pt"}
    assert [t["name"] for t in j["tensors"]] == list(tensors)  # header order
    for t in j["tensors"]:
        h = header[t["name"]]
        assert (t["dtype"], t["shape"], t["data_offsets"]) == (h["dtype"], h["shape"], h["data_offsets"])
    text = subprocess.run([SQ, "inspect", str(path)], capture_output=True, text=True, check=True).stdout
    assert "5 tensors" in text and "model.layers.0.self_attn.q_proj.weight" in text
    assert f"{7 * 5 + 25 + 5 + 1 + 3} parameters" in text


@pytest.mark.parametrize("case,needle", [
    ("truncated", "past the"),
    ("gap", "unused bytes"),
    ("dtype", "unknown dtype"),
    ("size", "needs"),
    ("length", "out of range"),
    ("json", "not valid JSON"),
])
def test_malformed_files_fail_with_one_line(tmp_path, case, needle):
    path = tmp_path / "bad.safetensors"
    arr = np.arange(6, dtype=np.float32)
    write_safetensors(path, {"w": ("F32", arr)})
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    if case == "truncated":
        raw = raw[:-4]
    elif case == "length":
        raw = struct.pack("<Q", 1 << 40) + raw[8:]
    elif case == "json":
        raw = raw[:8] + b"{" + raw[9:8 + n].replace(b":", b";", 1) + raw[8 + n:]
    else:
        if case == "gap":
            header["w"]["data_offsets"] = [4, 24]
            header["w"]["shape"] = [5]
        elif case == "dtype":
            header["w"]["dtype"] = "Q4_K"
        elif case == "size":
            header["w"]["shape"] = [7]
        text = json.dumps(header).encode()
        raw = struct.pack("<Q", len(text)) + text + raw[8 + n:]
    path.write_bytes(raw)
    r = subprocess.run([SQ, "inspect", str(path)], capture_output=True, text=True)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "bad.safetensors" in lines[0], r.stderr


def test_inspect_a_sharded_checkpoint_folder(tmp_path):
    rng = np.random.default_rng(5)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 8}))
    a = {"model.embed_tokens.weight": ("F32", rng.standard_normal((4, 8)).astype(np.float32)),
         "model.norm.weight": ("F32", np.ones(8, dtype=np.float32))}
    b = {"lm_head.weight": ("F16", rng.standard_normal((4, 8)).astype(np.float16))}
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", a)
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors", b)
    weight_map = {**{k: "model-00001-of-00002.safetensors" for k in a}, **{k: "model-00002-of-00002.safetensors" for k in b}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    j = inspect_json(tmp_path)
    assert j["config"]["model_type"] == "llama"
    assert j["shards"] == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    got = {t["name"]: (t["dtype"], t["shape"], t["shard"]) for t in j["tensors"]}
    assert got == {k: (v[0], list(v[1].shape), weight_map[k]) for k, v in {**a, **b}.items()}
    # The index naming a shard that does not hold the tensor: one line, exit 1.
    weight_map["lm_head.weight"] = "model-00001-of-00002.safetensors"
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    r = subprocess.run([SQ, "inspect", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
    assert "lists 'lm_head.weight' in model-00001-of-00002.safetensors" in r.stderr
