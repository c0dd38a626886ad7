"""A Hugging Face-style model folder: config.json and the weights beside it, read as data.

The weights are what transformers itself would load: `model.safetensors`, shards listed by
`model.safetensors.index.json` (or every `*.safetensors`), else `pytorch_model.bin` and its
shards. Each file is opened by identify's readers (harness.identify.files), so nothing is
unpickled that would run code, and a truncated or corrupt file is one line naming it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.identify.files import Stored, open_file
from harness.util.exitcodes import UsageError

#: (index file, single file, shard pattern), in the order transformers prefers them.
LAYOUTS = (("model.safetensors.index.json", "model.safetensors", "*.safetensors"),
           ("pytorch_model.bin.index.json", "pytorch_model.bin", "pytorch_model*.bin"))


@dataclass(frozen=True)
class ModelFolder:
    """The config and every stored tensor (read lazily), by name."""

    path: Path
    config: dict[str, Any]
    files: tuple[Path, ...]
    tensors: tuple[Stored, ...]


def open_folder(path: str | Path) -> ModelFolder:
    """The folder's config and tensors; a ValueError naming what is missing or unreadable."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"DIR {str(path)!r} does not exist")
    if not path.is_dir():
        raise UsageError(f"DIR {str(path)!r} is not a folder: check-model reads a model folder "
                         "(config.json and its weights)")
    config = read_config(path)
    files = weight_files(path)
    return ModelFolder(path, config, files, tuple(s for f in files for s in open_file(f)))


def read_config(folder: Path) -> dict[str, Any]:
    file = folder / "config.json"
    if not file.is_file():
        raise UsageError(f"{folder} has no config.json: check-model compares the tensors with "
                         "what the model's config implies")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{file} is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{file} must hold a JSON object, got {type(data).__name__}")
    return data


def weight_files(folder: Path) -> tuple[Path, ...]:
    """The weight files, safetensors first (what transformers loads when both are there)."""
    for index, single, pattern in LAYOUTS:
        if (folder / index).is_file():
            return _indexed(folder, folder / index)
        if (folder / single).is_file():
            return (folder / single,)
        shards = sorted(p for p in folder.glob(pattern) if p.is_file())
        if shards:
            return tuple(shards)
    raise UsageError(f"{folder} holds no weights: expected model.safetensors, sharded "
                     "*.safetensors, or pytorch_model.bin")


def _indexed(folder: Path, index: Path) -> tuple[Path, ...]:
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        names = sorted(set(weight_map.values()))
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError):
        raise UsageError(f"{index} is no shard index (a JSON object with a weight_map of "
                         "tensor -> file)") from None
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise UsageError(f"{index.name} names shard(s) {missing} that {folder} does not hold")
    return tuple(folder / n for n in names)
