"""Agreement of compiled schemas with labelled instances: JSON-Schema-Test-Suite and MaskBench.

Takes: the shared data folder (``MOONMASKC_DATA``, default ``../shared/data``). Hands on: per-keyword
and per-group counts (schemas compiled, invalid instances accepted - must be 0 -, valid instances
accepted), used by ``tests/test_schema_suites.py`` and printed as Markdown by

    PYTHONPATH=. python -m tests.schema_suite_report [--no-free-value-stacks]

Instances are serialized compactly (strings as ``json.dumps(x, ensure_ascii=False)``, numbers in
their one spelling: ``75.0`` as ``75``, ``1e5`` as ``100000``), with object keys moved into the
schema's declared property order where the schema declares one. An instance the DFA rejects in
that order is searched for in the other key orders (``tests/key_orders.py``, a bounded search:
the order the compiled language writes can differ from the declared one through ``allOf`` merges
or ``anyOf`` branches); it counts as accepted when some order is accepted, invalid instances
included, so that no invalid instance hides behind a key order. A valid instance may still be
rejected when our bounds cut it (recursion depth; ``{}`` values nested deeper than the bracket
stack's 31 levels, or than ``--max-depth`` where they are written out) or when the search runs
out of steps: that is counted, never hidden. Every shared MaskBench schema is compiled
(``MASKBENCH_MAX_BYTES`` only guards against a huge file).

References to other documents resolve offline as the suite means them: its ``remotes/`` folder is
what it serves at ``http://localhost:1234/``, so every schema compiles with
``ref_roots={"http://localhost:1234/": <data>/schemas/json-schema-test-suite/remotes}`` (the
``refRemote`` cases count), and the official meta-schemas come from ``jsonschema_specifications``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.counted import CountedRegionError, expand_markers
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.nested import NEST_CALL, NEST_OPEN_BYTES, NestRegionError, expand_nests
from moonmaskc.errors import MoonmaskError
from moonmaskc.frontends.schema import compile_schema_ir
from moonmaskc.limits import Limits
from tests.key_orders import accepts_in_some_key_order

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SUITE_DRAFTS = ("draft2020-12", "draft7")
CASE_SECONDS = 10.0
SUITE_LIMITS = Limits(max_states=50_000)
KEY_ORDER_BUDGET = 20_000  # steps of the key order search per instance (see tests/key_orders.py)


def data_dir() -> Path:
    return Path(os.environ.get("MOONMASKC_DATA", PROJECT_ROOT.parent / "shared" / "data")).resolve()


REMOTES_URI = "http://localhost:1234/"


def ref_roots() -> dict[str, Path]:
    """The suite's ``remotes/`` folder at the URI it is served at (none when it is absent)."""
    remotes = data_dir() / "schemas" / "json-schema-test-suite" / "remotes"
    return {REMOTES_URI: remotes} if remotes.is_dir() else {}


class CaseTimeout(Exception):
    pass


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def handler(signum: int, frame: Any) -> None:
        raise CaseTimeout()

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _resolve(schema: Any, root: Any) -> Any:
    for _ in range(10):
        if (
            isinstance(schema, dict)
            and isinstance(schema.get("$ref"), str)
            and schema["$ref"].startswith("#/")
        ):
            node: Any = root
            try:
                for part in schema["$ref"][2:].split("/"):
                    part = part.replace("~1", "/").replace("~0", "~")
                    node = node[int(part)] if isinstance(node, list) else node[part]
            except (KeyError, IndexError, ValueError, TypeError):
                return schema
            schema = node
        else:
            break
    return schema


def _required_order(value: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The keys that the compiler writes after the declared properties, in its order: ``required``,
    then per presence dependency whose key ``value`` holds, that key and the names it requires,
    then the ``required`` of the dependent schemas (see ``frontends/schema/dependencies.py``)."""
    order = list(schema.get("required", [])) if isinstance(schema.get("required"), list) else []
    dependencies = [
        (key, dependency)
        for keyword in ("dependentRequired", "dependentSchemas", "dependencies")
        if isinstance(schema.get(keyword), dict)
        for key, dependency in schema[keyword].items()
        if key in value
    ]
    for key, dependency in dependencies:
        order += [key, *(dependency if isinstance(dependency, list) else [])]
    for _, dependency in dependencies:
        if isinstance(dependency, dict) and isinstance(dependency.get("required"), list):
            order += dependency["required"]
    return order


def declared_order(value: Any, schema: Any, root: Any, depth: int = 0) -> Any:
    """``value`` with object keys moved into the schema's declared property order (best effort)."""
    schema = _resolve(schema, root)
    if depth > 20 or not isinstance(schema, dict):
        return value
    for part in schema.get("allOf", []) if isinstance(schema.get("allOf"), list) else []:
        value = declared_order(value, part, root, depth + 1)
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        declared = [k for k in props if k in value]
        for k in _required_order(value, schema):
            if k in value and k not in declared:
                declared.append(k)
        ordered = {k: value[k] for k in declared}
        ordered.update({k: v for k, v in value.items() if k not in ordered})
        extra = schema.get("additionalProperties")
        return {
            k: declared_order(v, props[k] if k in props else extra, root, depth + 1)
            for k, v in ordered.items()
        }
    if isinstance(value, list):
        items = schema.get("items")
        prefix = schema.get("prefixItems", items if isinstance(items, list) else [])
        rest = items if not isinstance(items, list) else schema.get("additionalItems")
        return [
            declared_order(v, prefix[i] if i < len(prefix) else rest, root, depth + 1)
            for i, v in enumerate(value)
        ]
    return value


def serialize_instance(value: Any, schema: Any) -> bytes:
    return _written(declared_order(value, schema, schema)).encode("utf-8")


def _written(value: Any) -> str:
    """Compact JSON with numbers in their one spelling (no exponent, no trailing zeros, an integral
    value without a fraction: ``75.0`` as ``75``), written here apart from the compiler's own."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{_written(str(k))}:{_written(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_written(v) for v in value) + "]"
    if isinstance(value, float) and math.isfinite(value):
        number = Decimal(repr(value))
        if number == number.to_integral_value():
            return str(int(number))
        text = format(number.normalize(), "f")
        return "0" if text in ("-0", "0") else text
    return json.dumps(value, ensure_ascii=False)


@dataclass
class Tally:
    cases: int = 0
    compiled: int = 0
    valid: int = 0
    valid_accepted: int = 0
    invalid: int = 0
    invalid_accepted: int = 0
    failures: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.cases += other.cases
        self.compiled += other.compiled
        self.valid += other.valid
        self.valid_accepted += other.valid_accepted
        self.invalid += other.invalid
        self.invalid_accepted += other.invalid_accepted
        self.failures.extend(other.failures)


FREE_VALUE_STACKS = [True]  # free values as nest regions (automata.nested); --no-free-value-stacks: off


def compiled_dfa(schema: Any, lenient: bool) -> tuple[Any, DFA]:
    """The front end's result and the DFA of ``schema`` as a compile without a token table makes
    them: long string bounds counted where a counter can run them (``automata.counted``), else
    written out; free values as nest regions where a stack can run them (``automata.nested``), else
    (and with ``--no-free-value-stacks``) written out to the depth bound."""
    attempts = (
        [(True, True), (True, False), (False, False)]
        if FREE_VALUE_STACKS[0]
        else [(True, False), (False, False)]
    )
    for counters, stacks in attempts[:-1]:
        try:
            return _compiled(schema, lenient, counters, stacks)
        except (CountedRegionError, NestRegionError):
            continue
    return _compiled(schema, lenient, *attempts[-1])


def _compiled(schema: Any, lenient: bool, counters: bool, stacks: bool) -> tuple[Any, DFA]:
    result = compile_schema_ir(
        schema,
        lenient=lenient,
        limits=SUITE_LIMITS,
        ref_roots=ref_roots(),
        length_counters=counters,
        nest_values=stacks,
    )
    dfa = compile_ir(result.node, SUITE_LIMITS)
    if result.markers and result.counted_char is not None:
        dfa = expand_markers(dfa, result.markers, result.counted_char)
    if result.nest_marker is not None and result.nest_level is not None:
        dfa = expand_nests(dfa, result.nest_marker, result.nest_level, NEST_CALL, NEST_OPEN_BYTES)
    return result, dfa


def check_case(schema: Any, tests: list[dict[str, Any]], label: str, lenient: bool = False) -> Tally:
    """Compile ``schema`` and run its labelled instances; a schema that does not compile is skipped."""
    tally = Tally(cases=1)
    try:
        with time_limit(CASE_SECONDS):
            result, dfa = compiled_dfa(schema, lenient)
    except (MoonmaskError, CaseTimeout, RecursionError):
        return tally
    if lenient and result.notes.get("ignored_keywords"):
        return tally
    tally.compiled = 1
    for test in tests:
        try:
            data = serialize_instance(test["data"], schema)
        except (TypeError, ValueError):
            continue
        accepted = dfa.accepts(data) or bool(
            accepts_in_some_key_order(dfa, test["data"], _written, KEY_ORDER_BUDGET)
        )
        if test["valid"]:
            tally.valid += 1
            tally.valid_accepted += accepted
        else:
            tally.invalid += 1
            if accepted:
                tally.invalid_accepted += 1
                tally.failures.append(f"{label}: accepted invalid {data[:200]!r}")
    return tally


def suite_files(draft: str) -> list[tuple[str, Path]]:
    base = data_dir() / "schemas" / "json-schema-test-suite" / draft
    files = [(p.stem, p) for p in sorted(base.glob("*.json"))]
    files += [(f"format:{p.stem}", p) for p in sorted((base / "optional" / "format").glob("*.json"))]
    return files


def run_suite_file(draft: str, keyword: str, path: Path) -> Tally:
    tally = Tally()
    for group in json.loads(path.read_text(encoding="utf-8")):
        label = f"{draft}/{keyword}: {group['description']}"
        tally.add(check_case(group["schema"], group["tests"], label))
    return tally


def run_suite(draft: str) -> dict[str, Tally]:
    return {keyword: run_suite_file(draft, keyword, path) for keyword, path in suite_files(draft)}


MASKBENCH_MAX_BYTES = 1_000_000  # every shared MaskBench schema (the largest is about 100 KB)


def maskbench_files() -> list[Path]:
    return sorted((data_dir() / "schemas" / "maskbench").glob("*/*.json"))


def run_maskbench_file(path: Path) -> Tally:
    if path.stat().st_size > MASKBENCH_MAX_BYTES:
        return Tally(cases=1)
    case = json.loads(path.read_text(encoding="utf-8"))
    return check_case(case["schema"], case.get("tests", []), f"maskbench/{path.parent.name}/{path.name}")


def _table(rows: dict[str, Tally], first: str) -> str:
    lines = [
        f"| {first} | schemas compiled | invalid accepted | valid accepted |",
        "|---|---|---|---|",
    ]
    total = Tally()
    for name, t in rows.items():
        total.add(t)
        lines.append(
            f"| {name} | {t.compiled} / {t.cases} | {t.invalid_accepted} / {t.invalid} "
            f"| {t.valid_accepted} / {t.valid} |"
        )
    lines.append(
        f"| **total** | {total.compiled} / {total.cases} | {total.invalid_accepted} / {total.invalid} "
        f"| {total.valid_accepted} / {total.valid} |"
    )
    return "\n".join(lines)


def main() -> None:
    FREE_VALUE_STACKS[0] = "--no-free-value-stacks" not in sys.argv[1:]
    started = time.time()
    for draft in SUITE_DRAFTS:
        print(f"\n### JSON-Schema-Test-Suite {draft}\n")
        print(_table(run_suite(draft), "keyword file"))
    groups: dict[str, Tally] = {}
    for path in maskbench_files():
        groups.setdefault(path.parent.name, Tally()).add(run_maskbench_file(path))
    print("\n### MaskBench\n")
    print(_table(groups, "group"))
    failures = [f for g in groups.values() for f in g.failures]
    print(f"\n({time.time() - started:.0f} s; {len(failures)} invalid instances accepted)", file=sys.stderr)
    for failure in failures[:20]:
        print(failure, file=sys.stderr)


if __name__ == "__main__":
    main()
