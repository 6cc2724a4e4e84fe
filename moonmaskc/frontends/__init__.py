"""Front ends: regex, GBNF and JSON Schema sources, each parsed into the shared byte IR.

Every front end hands on a ``FrontendResult``: the IR node plus ``notes`` (bounds applied and other
facts that ``inspect`` shows, JSON-able) and ``warnings`` (for example keywords ignored under
``--lenient``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from moonmaskc import ir


@dataclass
class FrontendResult:
    node: ir.Node
    notes: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
