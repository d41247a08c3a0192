"""response_format through the server on SmolLM2-135M-Instruct: 200 sampled generations
over 20 JSON schemas, each answer checked by the independent `jsonschema` package, plus
json_object mode. The grammar ends the answer when the value closes, so every answer must
finish with "stop", never "length".

Needs the real model (scripts/get-models); skipped, saying so, when it is absent."""
import concurrent.futures
import json
import os
import pathlib

import jsonschema
import openai
import pytest

from serve_util import Server

ROOT = pathlib.Path(__file__).resolve().parents[2]
SQ = os.environ.get("SQUEEZE_BIN", str(ROOT / "build/release/tools/squeeze"))
MODELS = pathlib.Path(os.environ.get("SQUEEZE_MODELS", ROOT / "build/models"))
SMOLLM = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"

pytestmark = pytest.mark.skipif(not SMOLLM.exists(), reason=f"{SMOLLM} not installed (scripts/get-models)")

S = {"type": "string", "maxLength": 24}
SCHEMAS = [
    ("Describe a person.", {"type": "object", "properties": {"name": S, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
                            "required": ["name", "age"]}),
    ("Is the sky blue?", {"type": "object", "properties": {"answer": {"type": "boolean"}}, "required": ["answer"]}),
    ("Pick a color.", {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}}, "required": ["color"]}),
    ("List three fruits.", {"type": "object", "properties": {"fruits": {"type": "array", "items": S, "minItems": 1, "maxItems": 3}},
                            "required": ["fruits"]}),
    ("Give a temperature.", {"type": "object", "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]}),
    ("Rate the movie.", {"type": "object", "properties": {"stars": {"type": "integer", "minimum": 1, "maximum": 5},
                                                          "review": S}, "required": ["stars"]}),
    ("Give a city and its country.", {"type": "object", "properties": {"city": S, "country": S}, "required": ["city", "country"]}),
    ("Name a number.", {"type": "integer", "minimum": -1000, "maximum": 1000}),
    ("Say yes or no.", {"enum": ["yes", "no"]}),
    ("Describe a book.", {"type": "object", "properties": {
        "title": S, "author": {"type": "object", "properties": {"first": S, "last": S}, "required": ["last"]},
        "year": {"type": "integer", "minimum": 1400, "maximum": 2030}}, "required": ["title", "author", "year"]}),
    ("Give a point.", {"type": "object", "properties": {"x": {"type": "number", "minimum": -10, "maximum": 10},
                                                        "y": {"type": "number", "minimum": -10, "maximum": 10}},
                       "required": ["x", "y"]}),
    ("A shopping list.", {"type": "array", "items": {"type": "object", "properties": {
        "item": S, "qty": {"type": "integer", "minimum": 1, "maximum": 12}}, "required": ["item", "qty"]}, "maxItems": 3}),
    ("Maybe a nickname.", {"type": "object", "properties": {"nickname": {"type": ["string", "null"], "maxLength": 16}},
                           "required": ["nickname"]}),
    ("A status.", {"type": "object", "properties": {"status": {"const": "ok"}, "code": {"type": "integer", "minimum": 100,
                                                                                       "exclusiveMaximum": 600}},
                   "required": ["status", "code"]}),
    ("Two people.", {"$defs": {"person": {"type": "object", "properties": {"name": S, "age": {
        "type": "integer", "minimum": 0, "maximum": 120}}, "required": ["name"]}},
        "type": "object", "properties": {"author": {"$ref": "#/$defs/person"}, "editor": {"$ref": "#/$defs/person"}},
        "required": ["author", "editor"]}),
    ("Either a name or an id.", {"type": "object", "properties": {
        "who": {"anyOf": [{"type": "string", "maxLength": 12}, {"type": "integer", "minimum": 0, "maximum": 99999}]}},
        "required": ["who"]}),
    ("Scores.", {"type": "object", "properties": {"scores": {"type": "array", "maxItems": 4, "items": {
        "type": "integer", "minimum": 0, "maximum": 100}}, "passed": {"type": "boolean"}}, "required": ["scores", "passed"]}),
    ("A short word.", {"type": "string", "minLength": 2, "maxLength": 6}),
    ("Settings.", {"type": "object", "properties": {"dark": {"type": "boolean"}, "size": {"enum": [10, 12, 14]},
                                                    "lang": {"enum": ["en", "fr"]}}, "required": ["dark", "size", "lang"]}),
    ("Coordinates list.", {"type": "object", "properties": {"points": {"type": "array", "maxItems": 2, "items": {
        "type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "minItems": 2, "maxItems": 2}}},
        "required": ["points"]}),
]
PER_SCHEMA = 10


@pytest.fixture(scope="module")
def client():
    s = Server(SQ, "-m", str(SMOLLM), "--parallel", "4", "--ctx", "1024")
    try:
        yield openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=300)
    finally:
        assert s.stop() == 0, "".join(s.log)


def ask(client, question, response_format, seed, temperature=0.8):
    r = client.chat.completions.create(
        model=SMOLLM.name, messages=[{"role": "user", "content": question + " Answer in JSON."}],
        response_format=response_format, temperature=temperature, seed=seed, max_tokens=400)
    return r.choices[0].message.content, r.choices[0].finish_reason


def test_twenty_schemas_every_sample_validates(client):
    jobs = [(q, schema, i) for q, schema in SCHEMAS for i in range(PER_SCHEMA)]
    assert len(SCHEMAS) == 20 and len(jobs) == 200

    def run(job):
        q, schema, i = job
        fmt = {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}}
        return job, ask(client, q, fmt, seed=1000 + i)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, jobs))
    bad = []
    for (q, schema, i), (text, finish) in results:
        try:
            assert finish == "stop", "finish " + finish
            jsonschema.validate(json.loads(text), schema)
        except (AssertionError, ValueError, jsonschema.ValidationError) as e:
            bad.append((q, i, text[:300], str(e)[:200]))
    assert not bad, bad


def test_json_object_mode_gives_an_object(client):
    for seed in range(3):
        text, finish = ask(client, "Describe a dog.", {"type": "json_object"}, seed, temperature=0.7)
        if finish == "stop":  # an unbounded object may run to max_tokens; what came must still be a prefix
            assert isinstance(json.loads(text), dict), text
        assert text.lstrip().startswith("{"), text


def test_unsupported_keywords_are_400_naming_them(client):
    for schema, word in [({"type": "string", "pattern": "(a)\\1"}, "pattern"), ({"type": "integer", "multipleOf": 2}, "multipleOf"),
                         ({"$ref": "#/nowhere"}, "names nothing")]:
        with pytest.raises(openai.BadRequestError) as e:
            ask(client, "x", {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}, 0)
        assert word in str(e.value) and e.value.body.get("param") == "response_format", str(e.value)
    with pytest.raises(openai.BadRequestError) as e:
        ask(client, "x", {"type": "xml"}, 0)
    assert "xml" in str(e.value)


def test_patterns_and_formats_validate(client):
    """`pattern` and the formats written as patterns: every answer matches (Python's `re`,
    through jsonschema) and parses as its format (datetime, uuid, ipaddress)."""
    import datetime
    import ipaddress
    import uuid
    schema = {"type": "object", "properties": {
        "code": {"type": "string", "pattern": "^[A-Z]{2,3}-\\d{3}$"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "id": {"type": "string", "format": "uuid"},
        "host": {"type": "string", "format": "ipv4"}}, "required": ["code", "day", "at", "id", "host"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "record", "schema": schema}}
    for seed in range(6):
        text, finish = ask(client, "A log record.", fmt, seed=seed)
        assert finish == "stop", text
        v = json.loads(text)
        jsonschema.validate(v, schema, format_checker=jsonschema.FormatChecker())
        datetime.date.fromisoformat(v["day"])
        datetime.datetime.fromisoformat(v["at"])
        uuid.UUID(v["id"])
        ipaddress.IPv4Address(v["host"])


def test_a_streamed_constrained_answer_equals_the_whole_one(client):
    schema = SCHEMAS[0][1]
    fmt = {"type": "json_schema", "json_schema": {"name": "p", "schema": schema}}
    whole, _ = ask(client, "Describe a person.", fmt, seed=77)
    chunks = client.chat.completions.create(
        model=SMOLLM.name, messages=[{"role": "user", "content": "Describe a person. Answer in JSON."}],
        response_format=fmt, temperature=0.8, seed=77, max_tokens=400, stream=True)
    text, finish = "", None
    for c in chunks:
        if c.choices:
            text += c.choices[0].delta.content or ""
            finish = c.choices[0].finish_reason or finish
    assert text == whole and finish == "stop"
    jsonschema.validate(json.loads(text), schema)
