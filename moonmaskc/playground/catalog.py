"""The Playground's presets: the example schemas, a date-time regex and a GBNF grammar.

Takes: the package data in ``moonmaskc/playground/presets/`` (copies of ``examples/schemas/user.json``,
``order.json`` and ``tool_call.json``, kept equal by a test, a date-time regex and a small arithmetic
grammar) and the shared data folder. Hands on: ``Preset`` values in the order the page lists them.

The GBNF preset is the shared ``json.gbnf`` (``$MOONMASKC_DATA/gbnf/json.gbnf``) unrolled to depth 3
when that file exists, else the built-in arithmetic grammar, also at depth 3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PRESET_DIR = Path(__file__).resolve().parent / "presets"
GBNF_DEPTH = 3


@dataclass(frozen=True)
class Preset:
    """One preset: ``key`` (stable, used by the page and tests), a label, the source kind and text,
    and the compile options the page starts from."""

    key: str
    label: str
    kind: str
    source: str
    options: dict[str, Any] = field(default_factory=dict)
    origin: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "kind": self.kind,
            "source": self.source,
            "options": dict(self.options),
            "origin": self.origin,
        }


def _read(name: str) -> str:
    return (PRESET_DIR / name).read_text(encoding="utf-8")


def gbnf_preset(data_dir: Path) -> Preset:
    shared = data_dir / "gbnf" / "json.gbnf"
    if shared.is_file():
        return Preset(
            "gbnf",
            f"GBNF: json.gbnf (depth {GBNF_DEPTH})",
            "gbnf",
            shared.read_text(encoding="utf-8"),
            {"max_depth": GBNF_DEPTH},
            str(shared),
        )
    return Preset(
        "gbnf",
        f"GBNF: arithmetic (depth {GBNF_DEPTH})",
        "gbnf",
        _read("arithmetic.gbnf"),
        {"max_depth": GBNF_DEPTH},
        "built in (the shared json.gbnf is absent)",
    )


def presets(data_dir: Path) -> list[Preset]:
    """Every preset, schemas first."""
    schema_options = {"whitespace": "compact"}
    found = [
        Preset(
            name, f"Schema: {name}.json", "schema", _read(f"{name}.json"), schema_options, f"examples/{name}"
        )
        for name in ("user", "order", "tool_call")
    ]
    found.append(
        Preset(
            "date_time",
            "Regex: RFC 3339 date-time",
            "regex",
            _read("date_time.regex").rstrip("\n"),
            {},
            "built in",
        )
    )
    found.append(gbnf_preset(data_dir))
    return found
