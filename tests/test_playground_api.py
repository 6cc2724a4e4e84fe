"""The Playground's JSON API through Starlette's test client: every preset compiles, stepping along a
valid instance, the 30 + 30 experiment (the numbers of ``moonmaskc sample``), JSON errors with
positions, request bounds, and a pathological regex stopped by the time limit."""

from __future__ import annotations

import json
import time
import tomllib
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip(
    "starlette", reason="the playground extra is not installed: pip install -e '.[playground]'"
)
pytest.importorskip("httpx", reason="starlette's test client needs httpx: pip install -e '.[playground]'")

from starlette.testclient import TestClient

import moonmaskc
from moonmaskc.cli import main
from moonmaskc.playground.app import create_app
from moonmaskc.playground.catalog import PRESET_DIR
from moonmaskc.playground.config import PlaygroundSettings
from tests.conftest import PROJECT_ROOT, data_dir

USER_INSTANCE = '{"id":7,"name":"Ann","email":"ann@example.com","role":"editor","active":true}'
PATHOLOGICAL_REGEX = "(a|b)*a(a|b){18}"


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    settings = PlaygroundSettings(time_limit=20.0, data_dir=data_dir())
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def compile_ok(client: TestClient, **body: Any) -> dict[str, Any]:
    body.setdefault("vocabulary", "bytes")
    response = client.post("/api/compile", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert "Traceback" not in error["message"]
    return dict(error)


def vocabularies(client: TestClient) -> list[str]:
    return [choice["key"] for choice in client.get("/api/info").json()["vocabularies"]]


# presets and compiling ----------------------------------------------------------------------------


def test_info_lists_presets_vocabularies_and_bounds(client: TestClient) -> None:
    info = client.get("/api/info").json()
    assert [preset["key"] for preset in info["presets"]] == [
        "user",
        "order",
        "tool_call",
        "date_time",
        "gbnf",
    ]
    assert {"schema", "regex", "gbnf"} == {preset["kind"] for preset in info["presets"]}
    assert info["vocabularies"][0]["key"] == "bytes"
    assert info["limits"]["max_states"] == 20_000 < moonmaskc.limits.DEFAULT_MAX_STATES
    assert all("spec" not in choice for choice in info["vocabularies"])  # the page never sees a path


def test_preset_schemas_are_the_examples() -> None:
    for name in ("user", "order", "tool_call"):
        shipped = (PRESET_DIR / f"{name}.json").read_text(encoding="utf-8")
        assert shipped == (PROJECT_ROOT / "examples" / "schemas" / f"{name}.json").read_text(encoding="utf-8")


def test_gbnf_preset_is_the_shared_json_grammar_at_depth_3_when_present(client: TestClient) -> None:
    preset = client.get("/api/info").json()["presets"][-1]
    assert preset["options"] == {"max_depth": 3}
    shared = data_dir() / "gbnf" / "json.gbnf"
    if shared.is_file():
        assert preset["source"] == shared.read_text(encoding="utf-8")
    else:
        assert "arithmetic" in preset["label"]
    fallback = PlaygroundSettings(data_dir=PROJECT_ROOT / "no-such-folder")
    assert "json.gbnf" not in create_app(fallback).state.playground.presets[-1].label


def test_every_preset_compiles_for_every_vocabulary(client: TestClient) -> None:
    info = client.get("/api/info").json()
    for preset in info["presets"]:
        for vocabulary in vocabularies(client):
            summary = compile_ok(
                client,
                kind=preset["kind"],
                source=preset["source"],
                vocabulary=vocabulary,
                options=preset["options"],
            )
            assert summary["states"] > 2 and summary["accepting_states"] >= 1 and summary["byte_classes"] > 1
            assert summary["grammar"] and summary["compile_ms"] > 0 and not summary["empty"]
            assert summary["vocabulary"]["name"] in ("bytes", "gpt2")
            if preset["kind"] == "schema":
                assert summary["options"]["whitespace"] == "compact" and summary["judge"] == "jsonschema"
            if preset["kind"] == "gbnf":
                assert summary["options"]["max_depth"] == 3
    again = compile_ok(client, kind="regex", source=info["presets"][3]["source"])
    assert again["cached"] is True


def test_the_state_count_follows_the_source_and_options(client: TestClient) -> None:
    user = (PRESET_DIR / "user.json").read_text(encoding="utf-8")
    full = compile_ok(client, kind="schema", source=user)
    shorter = compile_ok(client, kind="schema", source=user.replace('"maxLength": 40', '"maxLength": 4'))
    flexible = compile_ok(client, kind="schema", source=user, options={"whitespace": "flexible"})
    assert full["states"] == moonmaskc.compile_schema(json.loads(user), max_states=20_000).dfa.num_states
    assert shorter["states"] < full["states"] and flexible["states"] != full["states"]
    assert flexible["options"]["whitespace"] == "flexible"


# stepping ----------------------------------------------------------------------------------------


def walk(client: TestClient, summary: dict[str, Any], tokens: list[int]) -> None:
    """Step along ``tokens`` (each must be listed as allowed), then finish with eos."""
    state = summary["start"]
    eos = summary["vocabulary"]["eos_id"]
    for index, token in enumerate(tokens):
        described = client.post(
            "/api/state", json={"id": summary["id"], "state": state, "limit": 100_000}
        ).json()
        assert token in [item["id"] for item in described["tokens"]], (index, described["allowed_count"])
        assert described["allowed_count"] >= 1 and not described["accepting"] and described["distance"] > 0
        assert described["neighbourhood"]["ahead"], "a live, non-accepting state has a way on"
        step = client.post(
            "/api/step", json={"id": summary["id"], "state": state, "mode": "masked", "token": token}
        ).json()
        assert step["token"] == token and not step["dead"] and not step["finished"]
        state = step["state"]
    final = client.post("/api/state", json={"id": summary["id"], "state": state}).json()
    assert final["accepting"] and final["distance"] == 0 and final["eos_allowed"]
    assert final["neighbourhood"]["behind"], "the last state is reached from somewhere"
    done = client.post("/api/step", json={"id": summary["id"], "state": state, "token": eos}).json()
    assert done["finished"] and done["eos"] and done["state"] == state


def test_step_along_a_valid_instance_with_bytes(client: TestClient) -> None:
    user = (PRESET_DIR / "user.json").read_text(encoding="utf-8")
    summary = compile_ok(client, kind="schema", source=user)
    walk(client, summary, list(USER_INSTANCE.encode("utf-8")))


def test_step_along_a_valid_instance_with_gpt2(client: TestClient) -> None:
    if "gpt2" not in vocabularies(client):
        pytest.skip(f"{data_dir() / 'tokenizers' / 'gpt2.json'} is absent: set MOONMASKC_DATA")
    from tokenizers import Tokenizer

    tokens = Tokenizer.from_file(str(data_dir() / "tokenizers" / "gpt2.json")).encode(USER_INSTANCE).ids
    user = (PRESET_DIR / "user.json").read_text(encoding="utf-8")
    walk(client, compile_ok(client, kind="schema", source=user, vocabulary="gpt2"), tokens)


def test_unmasked_steps_fall_into_the_dead_state_and_replay(client: TestClient) -> None:
    summary = compile_ok(client, kind="regex", source="[0-9]{4}")
    start = summary["start"]
    first = client.post(
        "/api/step", json={"id": summary["id"], "state": start, "mode": "unmasked", "seed": 3}
    )
    again = client.post(
        "/api/step", json={"id": summary["id"], "state": start, "mode": "unmasked", "seed": 3}
    )
    assert first.json() == again.json()
    wrong = client.post("/api/step", json={"id": summary["id"], "state": start, "token": ord("x")}).json()
    assert wrong["dead"] and wrong["state"] == 0 and wrong["distance"] == -1
    dead = client.post("/api/state", json={"id": summary["id"], "state": 0}).json()
    assert dead["dead"] and dead["allowed_count"] == 0 and dead["tokens"] == []
    searched = client.post("/api/state", json={"id": summary["id"], "state": start, "query": "7"}).json()
    assert searched["allowed_count"] == 10 and [item["text"] for item in searched["tokens"]] == ["7"]


# the experiment ----------------------------------------------------------------------------------


@pytest.mark.parametrize("vocabulary", ["bytes", "gpt2"])
def test_experiment_matches_moonmaskc_sample(client: TestClient, vocabulary: str, tmp_path: Path) -> None:
    if vocabulary not in vocabularies(client):
        pytest.skip(f"{data_dir() / 'tokenizers' / 'gpt2.json'} is absent: set MOONMASKC_DATA")
    user = (PRESET_DIR / "user.json").read_text(encoding="utf-8")
    summary = compile_ok(client, kind="schema", source=user, vocabulary=vocabulary)
    response = client.post(
        "/api/sample", json={"id": summary["id"], "count": 30, "seed": 42, "max_tokens": 256}
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["masked"]["valid"] == 30 and result["masked"]["finished"] == 30
    assert result["unmasked"]["valid"] < 30 and result["judge"] == "jsonschema"

    download = client.get(f"/api/artifact/{summary['id']}")
    assert download.status_code == 200 and "attachment" in download.headers["content-disposition"]
    path = tmp_path / "user.npz"
    path.write_bytes(download.content)
    cli = CliRunner().invoke(
        main, ["sample", str(path), "-n", "30", "--seed", "42", "--max-tokens", "256", "--json"]
    )
    assert cli.exit_code == 0, cli.output
    expected = json.loads(cli.output)
    for strategy in ("masked", "unmasked"):
        for figure in ("valid", "finished", "mean_tokens"):
            assert result[strategy][figure] == expected[strategy][figure], (strategy, figure)
        shown = [sample["text"] for sample in result[strategy]["samples"]]
        assert shown == [sample["text"] for sample in expected[strategy]["samples"]][: len(shown)]
    assert moonmaskc.load(str(path)).num_states == summary["states"]


# errors ------------------------------------------------------------------------------------------


def test_source_errors_carry_their_position(client: TestClient) -> None:
    regex = error_of(client.post("/api/compile", json={"kind": "regex", "source": "ab(c"}), 422)
    assert regex["type"] == "source" and "missing ')'" in regex["message"] and regex["start"] == 4
    broken = '{\n  "type": "object",\n  "properties" {}\n}'
    schema = error_of(client.post("/api/compile", json={"kind": "schema", "source": broken}), 422)
    assert (schema["line"], schema["column"]) == (3, 16) and schema["start"] == broken.index("{}")
    refused = '{"type": "object", "properties": {"a": {"type": "string", "format": "idn-email"}}}'
    keyword = error_of(client.post("/api/compile", json={"kind": "schema", "source": refused}), 422)
    assert keyword["type"] == "unsupported" and refused[keyword["start"] : keyword["end"]] == '"idn-email"'
    grammar = error_of(client.post("/api/compile", json={"kind": "gbnf", "source": "root ::= item"}), 422)
    assert "undefined rule" in grammar["message"] and grammar["start"] == len("root ::= ")
    wide = "😀😀(x"  # offsets count UTF-16 code units, as the browser does
    emoji = error_of(client.post("/api/compile", json={"kind": "regex", "source": wide}), 422)
    assert emoji["start"] == 6


def test_limit_errors_name_their_bound(client: TestClient) -> None:
    user = (PRESET_DIR / "user.json").read_text(encoding="utf-8")
    body = {"kind": "schema", "source": user, "options": {"max_states": 50}}
    error = error_of(client.post("/api/compile", json=body), 422)
    assert error["type"] == "limit" and error["bound"] == "max_states"
    too_many = {"kind": "regex", "source": "a", "options": {"max_states": 10**9}}
    assert "max_states" in error_of(client.post("/api/compile", json=too_many), 400)["message"]


def test_bad_requests_are_json_errors(client: TestClient) -> None:
    assert (
        error_of(client.post("/api/compile", json={"kind": "python", "source": "x"}), 400)["type"]
        == "request"
    )
    assert error_of(client.post("/api/compile", json={"kind": "regex"}), 400)["type"] == "request"
    assert error_of(
        client.post("/api/compile", json={"kind": "regex", "source": "a", "vocabulary": "/etc/passwd"}), 400
    )
    assert error_of(client.post("/api/compile", json=["not", "an", "object"]), 400)["type"] == "request"
    not_json = client.post("/api/compile", content=b"{oops", headers={"content-type": "application/json"})
    assert error_of(not_json, 400)["type"] == "request"
    plain = client.post("/api/compile", content=b"{}", headers={"content-type": "text/plain"})
    assert error_of(plain, 415)["type"] == "content_type"
    assert error_of(client.post("/api/state", json={"id": "nope", "state": 1}), 404)["type"] == "not_found"
    assert error_of(client.get("/api/artifact/nope"), 404)["type"] == "not_found"
    assert error_of(client.get("/api/no-such-route"), 404)["type"] == "not_found"
    assert error_of(client.get("/static/no-such-file.js"), 404)["type"] == "not_found"
    assert error_of(client.get("/api/compile"), 405)["type"] == "method"
    summary = compile_ok(client, kind="regex", source="ab")
    out_of_range = {"id": summary["id"], "state": summary["states"]}
    assert error_of(client.post("/api/state", json=out_of_range), 400)["type"] == "request"
    bad_token = {"id": summary["id"], "state": summary["start"], "token": 10**6}
    assert error_of(client.post("/api/step", json=bad_token), 400)["type"] == "request"
    many = {"id": summary["id"], "count": 10**6}
    assert error_of(client.post("/api/sample", json=many), 400)["type"] == "request"


def test_oversize_bodies_are_refused(client: TestClient) -> None:
    limit = PlaygroundSettings().max_body_bytes
    body = json.dumps({"kind": "regex", "source": "a" * limit}).encode()
    declared = client.post("/api/compile", content=body, headers={"content-type": "application/json"})
    assert error_of(declared, 413)["type"] == "too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server counts what arrives
        for start in range(0, len(body), 65536):
            yield body[start : start + 65536]

    streamed = client.post("/api/compile", content=chunks(), headers={"content-type": "application/json"})
    assert error_of(streamed, 413)["type"] == "too_large"


def test_the_page_and_its_headers(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and 'type="module"' in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "http" not in page.text.replace("http-equiv", ""), "the page loads nothing from the network"
    script = client.get("/static/js/main.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]


def test_static_files_and_presets_are_package_data() -> None:
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["moonmaskc.playground"]
    package = PROJECT_ROOT / "moonmaskc" / "playground"
    shipped = [
        path for folder in ("static", "presets") for path in (package / folder).rglob("*") if path.is_file()
    ]
    assert len(shipped) >= 10
    for path in shipped:
        relative = path.relative_to(package).as_posix()
        assert any(fnmatch(relative, pattern) for pattern in globs), f"{relative} is not package data"
    assert "playground" in config["project"]["optional-dependencies"]


def test_host_header_is_checked_when_bound_to_loopback() -> None:
    settings = PlaygroundSettings(allowed_hosts=("127.0.0.1", "localhost"), data_dir=data_dir())
    app_client = TestClient(create_app(settings), base_url="http://127.0.0.1:8765")
    assert app_client.get("/api/info").status_code == 200
    rebinding = app_client.get("/api/info", headers={"host": "attacker.example:8765"})
    assert error_of(rebinding, 400)["type"] == "host"


# the time limit ----------------------------------------------------------------------------------


def test_a_pathological_regex_is_killed_at_the_time_limit() -> None:
    # (a|b)*a(a|b){18}: the DFA must remember the last 19 letters, 2^19 states; allowed here (a high
    # --max-states) so that only the time limit stops it (it takes over a second on this machine).
    settings = PlaygroundSettings(time_limit=60.0, max_states=1_000_000, workers=1, data_dir=data_dir())
    with TestClient(create_app(settings)) as limited:
        pool = limited.app.state.playground.pool  # type: ignore[attr-defined]
        compile_ok(limited, kind="regex", source="warm")
        pool.time_limit = 0.3
        started = time.perf_counter()
        response = limited.post("/api/compile", json={"kind": "regex", "source": PATHOLOGICAL_REGEX})
        elapsed = time.perf_counter() - started
        error = error_of(response, 422)
        assert error["type"] == "timeout" and "0.3 s" in error["message"]
        assert elapsed < 6, elapsed
        assert len(pool._workers) == 1
        pool.time_limit = 60.0
        assert compile_ok(limited, kind="regex", source="ab+")["states"] == 4  # a fresh worker took over


# the command --------------------------------------------------------------------------------------


def test_command_without_the_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("moonmaskc.playground.missing_requirements", lambda: ["starlette", "uvicorn"])
    result = CliRunner().invoke(main, ["playground"])
    assert result.exit_code == 2
    assert (
        "pip install" in result.output and "playground" in result.output and "Traceback" not in result.output
    )


def test_command_refuses_a_port_in_use() -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = CliRunner().invoke(main, ["playground", "--port", str(port)])
    assert result.exit_code == 2 and "pick another --port" in result.output
