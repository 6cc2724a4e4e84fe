"""Finding a model's ``tokenizer.json`` in the local Hugging Face hub cache (never downloading).

Takes: a model name (``owner/name``). Hands on: the path of its ``tokenizer.json`` in the first
cache folder that holds a snapshot of it (``refs/main`` first, else the newest snapshot).
"""

from __future__ import annotations

import os
from pathlib import Path

from moonmaskc.errors import VocabularyError

__all__ = ["hub_cache_dirs", "hub_cache_tokenizer"]


def hub_cache_dirs() -> list[Path]:
    """Where Hugging Face hub caches may live, most specific first."""
    dirs: list[Path] = []
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            dirs.append(Path(os.environ[variable]).expanduser())
    if os.environ.get("HF_HOME"):
        dirs.append(Path(os.environ["HF_HOME"]).expanduser() / "hub")
    dirs.append(Path("~/.cache/huggingface/hub").expanduser())
    return dirs


def hub_cache_tokenizer(model: str) -> Path:
    folder_name = "models--" + model.replace("/", "--")
    for hub in hub_cache_dirs():
        snapshots = hub / folder_name / "snapshots"
        if not snapshots.is_dir():
            continue
        ref = hub / folder_name / "refs" / "main"
        if ref.is_file():
            candidate = snapshots / ref.read_text().strip() / "tokenizer.json"
            if candidate.is_file():
                return candidate
        found = sorted(snapshots.glob("*/tokenizer.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        if found:
            return found[0]
    raise VocabularyError(
        f"{model!r} is neither a tokenizer.json file, a folder holding one, nor a model in the local "
        f"Hugging Face cache ({', '.join(str(d) for d in hub_cache_dirs())}); moonmaskc never downloads: "
        "pass a path to a tokenizer.json, or 'bytes'"
    )
