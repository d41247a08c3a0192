"""docs/server.md against the server: every row of its route table is requested and must
answer as the table says (served: anything but 404; 404: 404), the served rows must be the
routes the code registers (kRoutes in src/serve/http_server.cpp, which /metrics labels
with), and every field the table marks 400 must be refused with `error.param` naming it."""
import os
import pathlib
import re

import pytest

from serve_util import Server

ROOT = pathlib.Path(__file__).resolve().parents[2]
SQ = os.environ.get("SQUEEZE_BIN", str(ROOT / "build/release/tools/squeeze"))
STUDENT = ROOT / "models/muse-glimmer-kjv.f16.gguf"
DOC = (ROOT / "docs/server.md").read_text()


def section(title):
    start = DOC.index(title)
    end = DOC.find("\n#", start + len(title))
    return DOC[start:end if end >= 0 else len(DOC)]


ROUTES = re.findall(r"^\| `(GET|POST) (/[^`]*)` \| (served|404) \|", section("## Routes"), re.M)
# A value away from each refused field's neutral one.
REFUSED_EXAMPLES = {"echo": True, "suffix": "end", "best_of": 2, "functions": [], "function_call": "auto",
                    "audio": {"voice": "x"}, "modalities": ["text", "audio"], "web_search_options": {}, "grammar": "root ::= \"a\"",
                    "samplers": ["top_k"], "n_probs": 3, "typical_p": 0.5, "mirostat": 2, "dynatemp_range": 0.5,
                    "xtc_probability": 0.5, "dry_multiplier": 0.8, "top_n_sigma": 1.0}


def refused_fields():
    fields = []
    for row in re.findall(r"^\| (.*?) \| 400 \|", section("### Chat and completions"), re.M):
        fields += re.findall(r"`([a-z_]+)`", row)
    return fields


@pytest.fixture(scope="module")
def server():
    s = Server(SQ, "-m", str(STUDENT), "--parallel", "2")
    yield s
    assert s.stop() == 0, "".join(s.log)


def test_the_table_lists_the_routes_the_code_registers():
    source = (ROOT / "src/serve/http_server.cpp").read_text()
    registered = set(re.findall(r'"(/[^"]*)"', source[source.index("kRoutes[]"):source.index("};", source.index("kRoutes[]"))]))
    served = {path for _, path, status in ROUTES if status == "served"}
    assert len(ROUTES) >= 20 and served == registered, (served ^ registered)


def test_every_route_answers_as_the_table_says(server):
    for method, path, status in ROUTES:
        code, _, body = server.request(method, path, {} if method == "POST" else None)
        if status == "served":
            assert code != 404, (method, path, body)
        else:
            assert code == 404, (method, path, code)


def test_every_field_marked_400_is_refused_naming_it(server):
    fields = refused_fields()
    assert set(fields) == set(REFUSED_EXAMPLES), set(fields) ^ set(REFUSED_EXAMPLES)
    for field in fields:
        for path, base in [("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}]}),
                           ("/v1/completions", {"prompt": "In the beginning"})]:
            code, _, r = server.request("POST", path, {**base, "max_tokens": 2, field: REFUSED_EXAMPLES[field]})
            assert code == 400 and r["error"]["param"] == field, (path, field, r)
