"""/v1/embeddings on SmolLM2-135M-Instruct against llama.cpp's vectors for the same ten
sentences (tests/fixtures/embeddings/smollm2-llamacpp.json, written by
scripts/make-embedding-fixtures from llama.cpp's llama-embedding, since CI cannot run it):
cosine >= 0.999 for mean and last pooling; batched inputs equal single ones; normalize,
base64 and the field errors; an embedding request while a generation streams.

Needs the real model (scripts/get-models); skipped, saying so, when it is absent."""
import base64
import concurrent.futures
import json
import os
import pathlib
import struct

import numpy as np
import openai
import pytest

from serve_util import Server

ROOT = pathlib.Path(__file__).resolve().parents[2]
SQ = os.environ.get("SQUEEZE_BIN", str(ROOT / "build/release/tools/squeeze"))
MODELS = pathlib.Path(os.environ.get("SQUEEZE_MODELS", ROOT / "build/models"))
SMOLLM = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
FIXTURE = json.loads((ROOT / "tests/fixtures/embeddings/smollm2-llamacpp.json").read_text())

pytestmark = pytest.mark.skipif(not SMOLLM.exists(), reason=f"{SMOLLM} not installed (scripts/get-models)")


@pytest.fixture(scope="module")
def server():
    s = Server(SQ, "-m", str(SMOLLM), "--parallel", "2", "--ctx", "1024")
    yield s
    assert s.stop() == 0, "".join(s.log)


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=300)


def embed(client, inputs, **extra):
    r = client.embeddings.create(model=SMOLLM.name, input=inputs, extra_body=extra or None)
    return np.array([d.embedding for d in r.data]), r


@pytest.mark.parametrize("pooling", ["mean", "last"])
def test_vectors_match_llama_cpp(client, pooling):
    assert FIXTURE["model"] == SMOLLM.name
    ours, r = embed(client, FIXTURE["sentences"], pooling=pooling)
    ref = np.array(FIXTURE["vectors"][pooling])
    assert ours.shape == ref.shape
    cos = (ours * ref).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= 0.999, cos
    assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-5)
    assert [d.index for d in r.data] == list(range(10)) and r.usage.prompt_tokens > 10


def test_batched_inputs_equal_single_ones_and_the_options(client, server):
    batch, _ = embed(client, FIXTURE["sentences"][:3])
    for i in range(3):
        single, _ = embed(client, FIXTURE["sentences"][i])
        assert np.array_equal(single[0], batch[i])
    raw, _ = embed(client, FIXTURE["sentences"][0], normalize=False)
    assert abs(np.linalg.norm(raw[0]) - 1) > 1e-3
    assert np.allclose(raw[0] / np.linalg.norm(raw[0]), batch[0], atol=1e-6)
    ids = server.request("POST", "/tokenize", {"content": FIXTURE["sentences"][0]})[2]["tokens"]
    by_ids, _ = embed(client, [ids])
    assert np.array_equal(by_ids[0], batch[0])
    code, _, r = server.request("POST", "/v1/embeddings", {"input": FIXTURE["sentences"][0], "encoding_format": "base64"})
    assert code == 200
    b = base64.b64decode(r["data"][0]["embedding"])
    assert np.array_equal(np.array(struct.unpack(f"<{len(b) // 4}f", b), dtype=np.float32), batch[0].astype(np.float32))
    cls, _ = embed(client, FIXTURE["sentences"][0], pooling="cls")
    assert not np.allclose(cls[0], batch[0])


def test_field_errors_are_400(server):
    for body, field in [({}, "input"), ({"input": []}, "input"), ({"input": [1.5]}, "input"), ({"input": [[10 ** 9]]}, "input"),
                        ({"input": ["a"] * 300}, "input"), ({"input": "a", "pooling": "max"}, "pooling"),
                        ({"input": "a", "dimensions": 7}, "dimensions"), ({"input": "a", "encoding_format": "hex"}, "encoding_format"),
                        ({"input": "word " * 2000}, "input")]:
        code, _, r = server.request("POST", "/v1/embeddings", body)
        assert code == 400 and r["error"]["param"] == field, (body, r)
    code, _, r = server.request("POST", "/v1/embeddings", {"input": "a", "model": "other"})
    assert code == 404


def test_embeddings_while_a_generation_streams(client):
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        gen = pool.submit(lambda: list(client.completions.create(model=SMOLLM.name, prompt="Once upon a time", max_tokens=64,
                                                                 temperature=0, stream=True)))
        vectors = [embed(client, s)[0] for s in FIXTURE["sentences"][:4]]
        chunks = gen.result(timeout=300)
    assert chunks[-1].choices[0].finish_reason == "length"
    alone = [embed(client, s)[0] for s in FIXTURE["sentences"][:4]]
    assert all(np.array_equal(a, b) for a, b in zip(vectors, alone))
