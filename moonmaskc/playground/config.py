"""The Playground's settings and the vocabularies it offers.

Takes: the command's options (``--tokenizer``, ``--max-states``, ``--time-limit``, ...) and the
environment (``MOONMASKC_DATA``, default ``../shared/data`` beside the checkout). Hands on: a frozen
``PlaygroundSettings`` and its ``vocabularies()``: the built-in ``bytes``, GPT-2 when
``$MOONMASKC_DATA/tokenizers/gpt2.json`` exists, and the ``--tokenizer`` given at start.

The page names a vocabulary by its key only, never by a path: the server alone decides which files
it reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

PLAYGROUND_MAX_STATES = 20_000
PLAYGROUND_MAX_TABLE_CELLS = 1 << 26
PLAYGROUND_TIME_LIMIT_S = 10.0
PLAYGROUND_MAX_BODY_BYTES = 256 * 1024
DEFAULT_PORT = 8765
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def default_data_dir() -> Path:
    """``$MOONMASKC_DATA``, else ``shared/data`` beside the checkout that holds this package."""
    configured = os.environ.get("MOONMASKC_DATA")
    if configured:
        return Path(configured).expanduser()
    return Path(__file__).resolve().parents[3] / "shared" / "data"


@dataclass(frozen=True)
class VocabularyChoice:
    """A vocabulary the page may pick: ``key`` (what the page sends), a label, and the spec handed
    to ``load_vocabulary``."""

    key: str
    label: str
    spec: str

    def as_dict(self) -> dict[str, str]:
        return {"key": self.key, "label": self.label}


@dataclass(frozen=True)
class PlaygroundSettings:
    """Bounds and sources of one Playground server.

    ``max_states`` is both the default and the ceiling of the page's ``--max-states``;
    ``time_limit`` (seconds) bounds one compile, after which its worker process is killed;
    ``max_body_bytes`` bounds a request body; ``allowed_hosts``, when set, are the only ``Host``
    header names accepted (the command sets the loopback names when it binds 127.0.0.1)."""

    time_limit: float = PLAYGROUND_TIME_LIMIT_S
    max_states: int = PLAYGROUND_MAX_STATES
    max_table_cells: int = PLAYGROUND_MAX_TABLE_CELLS
    max_body_bytes: int = PLAYGROUND_MAX_BODY_BYTES
    workers: int = 2
    tokenizer: str | None = None
    data_dir: Path = field(default_factory=default_data_dir)
    allowed_hosts: tuple[str, ...] | None = None
    cached_artifacts: int = 24
    max_samples: int = 200
    max_sample_tokens: int = 1024

    def vocabularies(self) -> list[VocabularyChoice]:
        choices = [VocabularyChoice("bytes", "bytes (built in: 256 bytes + eos)", "bytes")]
        gpt2 = self.data_dir / "tokenizers" / "gpt2.json"
        if gpt2.is_file():
            choices.append(VocabularyChoice("gpt2", "GPT-2 (50,257 tokens)", str(gpt2)))
        if self.tokenizer:
            choices.append(VocabularyChoice("custom", f"--tokenizer {self.tokenizer}", self.tokenizer))
        return choices

    def default_vocabulary(self) -> str:
        return "custom" if self.tokenizer else "bytes"
