"""tests/python/test_gguf_crosscheck.py — our GGUF reader and writer against gguf-py,
an independent implementation (the `gguf` package from llama.cpp):

(a) files written by gguf-py's GGUFWriter are read by `squeeze inspect --json` with the
    same keys, value types, values, shapes, offsets and tensor bytes;
(b) files written by our gguf::Writer (through the test-only gguf_test_tool) are read by
    gguf-py's GGUFReader with the same content;
(c) the malformed-file corpus: `squeeze inspect` rejects each file with exit code 1 and
    exactly one stderr line carrying that defect's own message.
"""
import json
import os
import subprocess

import gguf  # installed by scripts/common.sh; a missing package is a failure, not a skip
import numpy as np
from gguf import GGMLQuantizationType as QT
from gguf import GGUFValueType as VT

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
BUILD = os.environ.get("SQUEEZE_BUILD", "build/release")
TOOL = os.path.join(BUILD, "tests", "gguf", "gguf_test_tool")

# gguf-py value type -> our JSON type name
TYPE_NAME = {VT.UINT8: "u8", VT.INT8: "i8", VT.UINT16: "u16", VT.INT16: "i16", VT.UINT32: "u32",
             VT.INT32: "i32", VT.FLOAT32: "f32", VT.BOOL: "bool", VT.STRING: "string",
             VT.ARRAY: "array", VT.UINT64: "u64", VT.INT64: "i64", VT.FLOAT64: "f64"}
INT_RANGE = {"u8": (0, 2**8 - 1), "i8": (-2**7, 2**7 - 1), "u16": (0, 2**16 - 1), "i16": (-2**15, 2**15 - 1),
             "u32": (0, 2**32 - 1), "i32": (-2**31, 2**31 - 1), "u64": (0, 2**64 - 1), "i64": (-2**63, 2**63 - 1)}


def inspect_json(path):
    r = subprocess.run([SQ, "inspect", "--json", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def same_scalar(type_name, got, want):
    if type_name == "f32":
        return np.float32(got) == np.float32(want)
    if type_name == "f64":
        return float(got) == float(want)
    return got == want


def random_scalar(rng, t):
    if t in INT_RANGE:
        lo, hi = INT_RANGE[t]
        mid = int(rng.integers(lo, hi, endpoint=True, dtype=np.uint64 if t == "u64" else np.int64))
        return [lo, hi, mid, mid][int(rng.integers(0, 4))]  # extremes often: they catch width bugs
    if t == "f32":
        return float(np.float32(rng.standard_normal() * 1e3))
    if t == "f64":
        return float(rng.standard_normal() * 1e-5)
    if t == "bool":
        return bool(rng.integers(0, 2))
    if t == "string":
        return "".join(rng.choice(list("abcxyz é✓<>{} \n\t"), size=int(rng.integers(0, 12))))
    raise AssertionError(t)


# --- (a) gguf-py writes, we read --------------------------------------------------

def test_gguf_py_file_is_read_identically(tmp_path):
    rng = np.random.default_rng(7)
    path = tmp_path / "py.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_custom_alignment(64)
    expected = {"general.architecture": ("string", "llama"), "general.alignment": ("u32", 64)}
    scalar_adders = {"u8": w.add_uint8, "i8": w.add_int8, "u16": w.add_uint16, "i16": w.add_int16,
                     "u32": w.add_uint32, "i32": w.add_int32, "u64": w.add_uint64, "i64": w.add_int64,
                     "f32": w.add_float32, "f64": w.add_float64, "bool": w.add_bool, "string": w.add_string}
    vt_of = {v: k for k, v in TYPE_NAME.items()}
    for t, add in scalar_adders.items():
        v = random_scalar(rng, t)
        add(f"x.{t}", v)
        expected[f"x.{t}"] = (t, v)
        items = [random_scalar(rng, t) for _ in range(int(rng.integers(1, 40)))]
        w.add_key_value(f"x.arr_{t}", items, VT.ARRAY, sub_type=vt_of[t])
        expected[f"x.arr_{t}"] = ("array", (t, items))
    nested = [[1, 2, 3], [4], [5, 6]]  # gguf-py writes inner arrays of i32
    w.add_array("x.nested", nested)

    tensors = {
        "w.f32": (rng.standard_normal((3, 64)).astype(np.float32), QT.F32),
        "w.f16": (rng.standard_normal((2, 5, 32)).astype(np.float16), QT.F16),
    }
    q8 = gguf.quants.quantize(rng.standard_normal((4, 128)).astype(np.float32), QT.Q8_0)
    tensors["w.q8_0"] = (q8, QT.Q8_0)
    for name, (arr, qt) in tensors.items():
        w.add_tensor(name, arr, raw_dtype=qt if qt == QT.Q8_0 else None)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    ours = inspect_json(path)
    assert ours["version"] == 3 and ours["alignment"] == 64
    md = ours["metadata"]
    assert set(md) == set(expected) | {"x.nested"}
    for key, (t, v) in expected.items():
        assert md[key]["type"] == t, key
        if t == "array":
            et, items = v
            assert md[key]["element_type"] == et, key
            assert len(md[key]["value"]) == len(items), key
            assert all(same_scalar(et, g, x) for g, x in zip(md[key]["value"], items)), key
        else:
            assert same_scalar(t, md[key]["value"], v), (key, md[key]["value"], v)
    assert md["x.nested"]["element_type"] == "array"
    assert [item["value"] for item in md["x.nested"]["value"]] == nested
    assert all(item["element_type"] == "i32" for item in md["x.nested"]["value"])

    # Tensors: our table against gguf-py's reader, and our offsets point at the bytes gguf-py wrote.
    theirs = {t.name: t for t in gguf.GGUFReader(str(path)).tensors}
    raw = path.read_bytes()
    assert [t["name"] for t in ours["tensors"]] == list(tensors)
    for t in ours["tensors"]:
        arr, qt = tensors[t["name"]]
        ref = theirs[t["name"]]
        assert t["type_id"] == int(qt) and t["type"] == qt.name
        assert t["shape"] == [int(x) for x in ref.shape]
        assert t["n_bytes"] == int(ref.n_bytes) == arr.nbytes
        assert ours["data_offset"] + t["offset"] == int(ref.data_offset)
        assert t["offset"] % 64 == 0
        start = ours["data_offset"] + t["offset"]
        assert raw[start:start + t["n_bytes"]] == arr.tobytes()
    f16_shape = next(t["shape"] for t in ours["tensors"] if t["name"] == "w.f16")
    assert f16_shape == [32, 5, 2]  # ne order: row length first
    assert ours["totals"]["n_params"] == 3 * 64 + 2 * 5 * 32 + 4 * 128


# --- (b) we write, gguf-py reads -----------------------------------------------------

def build_spec(rng):
    md = {}
    for t in INT_RANGE.keys() | {"f32", "f64", "bool", "string"}:
        md[f"s.{t}"] = {"type": t, "value": random_scalar(rng, t)}
        md[f"a.{t}"] = {"type": "array", "element_type": t,
                        "value": [random_scalar(rng, t) for _ in range(int(rng.integers(1, 50)))]}
    md["n.nested"] = {"type": "array", "element_type": "array", "value": [
        {"type": "array", "element_type": "u16", "value": [1, 2, 3]},
        {"type": "array", "element_type": "u16", "value": [65535]}]}
    md["general.architecture"] = {"type": "string", "value": "llama"}
    tensors = []
    for i, qt in enumerate([QT.F32, QT.F16, QT.BF16, QT.Q8_0, QT.Q4_0, QT.Q4_K, QT.Q5_K, QT.Q6_K, QT.Q8_K,
                            QT.Q2_K, QT.Q3_K, QT.IQ4_NL, QT.I32, QT.F64]):
        block, size = gguf.GGML_QUANT_SIZES[qt]
        shape = [block * (1 + i % 3), 2 + i % 2] + ([3] if i % 4 == 1 else [])
        n_bytes = int(np.prod(shape)) // block * size
        data = rng.integers(0, 256, size=n_bytes, dtype=np.uint8).tobytes()
        tensors.append({"name": f"blk.{i}.{qt.name.lower()}", "type": qt.name, "shape": shape, "data_hex": data.hex()})
    return {"alignment": 128, "metadata": md, "tensors": tensors}


def flatten(v):
    """A JSON value flattened the way gguf-py's contents() flattens nested arrays."""
    if v["type"] != "array":
        return v["value"]
    out = []
    for item in v["value"]:
        out.extend(flatten(item) if isinstance(item, dict) else [item])
    return out


def test_our_file_is_read_identically_by_gguf_py(tmp_path):
    assert os.path.exists(TOOL), f"{TOOL} not built (set SQUEEZE_BUILD)"
    rng = np.random.default_rng(11)
    spec = build_spec(rng)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    path = tmp_path / "ours.gguf"
    r = subprocess.run([TOOL, "from-json", str(tmp_path / "spec.json"), str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

    reader = gguf.GGUFReader(str(path))
    expected = dict(spec["metadata"], **{"general.alignment": {"type": "u32", "value": 128}})
    real_fields = {k for k in reader.fields if not k.startswith("GGUF.")}  # GGUF.* are header pseudo-fields
    assert real_fields == set(expected)
    assert reader.fields["GGUF.version"].contents() == 3
    for key, v in expected.items():
        field = reader.fields[key]
        assert TYPE_NAME[field.types[0]] == v["type"], key
        if v["type"] == "array" and v["element_type"] != "array":
            assert TYPE_NAME[field.types[-1]] == v["element_type"], key
        got, want = field.contents(), flatten(v)
        elem = v.get("element_type", v["type"])
        if isinstance(want, list):
            assert len(got) == len(want), key
            assert all(same_scalar(elem if elem != "array" else "u16", g, x) for g, x in zip(got, want)), key
        else:
            assert same_scalar(v["type"], got, want), (key, got, want)

    assert len(reader.tensors) == len(spec["tensors"])
    ours = inspect_json(path)
    for ref, want, mine in zip(reader.tensors, spec["tensors"], ours["tensors"]):
        assert ref.name == want["name"]
        assert ref.tensor_type.name == want["type"]
        assert [int(x) for x in ref.shape] == want["shape"]
        assert int(ref.data_offset) % 128 == 0
        assert int(ref.data_offset) == ours["data_offset"] + mine["offset"]
        assert ref.data.tobytes() == bytes.fromhex(want["data_hex"]), ref.name

    # Our own reader returns exactly the values the spec asked for, types included.
    assert {k: v for k, v in ours["metadata"].items() if k != "general.alignment"} == spec["metadata"]


def test_reading_our_file_and_rewriting_it_is_lossless(tmp_path):
    """inspect --json → gguf_test_tool from-json gives back the same metadata."""
    rng = np.random.default_rng(3)
    spec = build_spec(rng)
    spec["tensors"] = spec["tensors"][:3]
    (tmp_path / "a.json").write_text(json.dumps(spec))
    subprocess.run([TOOL, "from-json", str(tmp_path / "a.json"), str(tmp_path / "a.gguf")], check=True)
    first = inspect_json(tmp_path / "a.gguf")
    spec2 = {"metadata": first["metadata"], "tensors": spec["tensors"]}
    (tmp_path / "b.json").write_text(json.dumps(spec2))
    subprocess.run([TOOL, "from-json", str(tmp_path / "b.json"), str(tmp_path / "b.gguf")], check=True)
    assert (tmp_path / "a.gguf").read_bytes() == (tmp_path / "b.gguf").read_bytes()


# --- (c) malformed files through the CLI ------------------------------------------

def test_malformed_corpus_each_rejected_with_its_own_message(tmp_path):
    assert os.path.exists(TOOL), f"{TOOL} not built (set SQUEEZE_BUILD)"
    subprocess.run([TOOL, "corpus", str(tmp_path)], check=True)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert len(manifest) >= 30
    messages = set()
    for case in manifest:
        r = subprocess.run([SQ, "inspect", case["file"]], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1, case["name"]
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, (case["name"], r.stderr)
        assert case["expect"] in lines[0], (case["name"], lines[0])
        assert case["file"] in lines[0], "the message names the file"
        assert "ERROR: AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr
        messages.add(lines[0])
    assert len(messages) == len(manifest)


def test_inspect_text_abbreviates_long_arrays(tmp_path):
    w = gguf.GGUFWriter(str(tmp_path / "v.gguf"), "llama")
    w.add_array("tokenizer.ggml.tokens", [f"tok{i}" for i in range(1000)])
    w.add_tensor("t", np.zeros((2, 32), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    r = subprocess.run([SQ, "inspect", str(tmp_path / "v.gguf")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if "tokenizer.ggml.tokens" in x)
    assert "'tok0'" in line and "'tok999'" not in line and "(1000 items)" in line
    assert "64 parameters" in r.stdout and "32.0000 bits per weight" in r.stdout
