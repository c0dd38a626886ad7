"""Where the library GPU kernels come from, and how one that PyPI ships only as source is brought in.

FlashAttention's Triton rotary (`flash_attn/ops/triton/rotary.py`) needs only torch and triton,
but PyPI ships flash-attn as a source distribution whose build compiles CUDA extensions for an
hour. So `flash_attn_source` downloads that sdist with pip (`--no-binary`, nothing built but its
metadata) and extracts exactly two of its files: the module, and the package's own PKG-INFO as
`flash_attn.egg-info`, so `importlib.metadata.version("flash-attn")` reports the version that
was extracted. The module goes under `flash-attn-src/` (a name Python cannot import), so nothing
mistakes the folder for an installed flash_attn package; impls/libraries/flash_attn_triton.py
loads it by path. Nothing of flash-attn is committed to this repository.

Run as a script: `python scripts/kernel_sources.py DIR` puts it under DIR (what `nox -s triton`
and the GPU campaign do).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

#: The module of flash-attn's that is used, relative to its package root.
FLASH_ATTN_MODULE = "flash_attn/ops/triton/rotary.py"
#: Where it is extracted, relative to the folder on sys.path (not an importable name).
FLASH_ATTN_SOURCE = "flash-attn-src"
#: What its setup.py reads when pip prepares its metadata: look for no CUDA toolkit.
SKIP_CUDA_BUILD = {"FLASH_ATTENTION_SKIP_CUDA_BUILD": "TRUE"}
ROOT = Path(__file__).resolve().parent.parent


def pinned(name: str, constraints: Path = ROOT / "constraints.txt") -> str:
    """`name==version` as constraints.txt pins it; ValueError when it is not pinned there."""
    for line in constraints.read_text().splitlines():
        requirement = line.split("#")[0].strip()
        if requirement.lower().startswith(f"{name.lower()}=="):
            return requirement
    raise ValueError(f"{name} is not pinned in {constraints}")


def extract_flash_attn(sdist: Path, into: Path) -> str:
    """The module and PKG-INFO of a flash-attn sdist, extracted under `into`; returns its version."""
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        wanted = {f"{top}/PKG-INFO": into / "flash_attn.egg-info" / "PKG-INFO",
                  f"{top}/{FLASH_ATTN_MODULE}": into / FLASH_ATTN_SOURCE / FLASH_ATTN_MODULE}
        for member, target in wanted.items():
            source = tar.extractfile(member)
            if source is None:
                raise ValueError(f"{sdist.name} has no file {member}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())
    version = next(line.split(":", 1)[1].strip()
                   for line in (into / "flash_attn.egg-info" / "PKG-INFO").read_text().splitlines()
                   if line.startswith("Version:"))
    return version


def flash_attn_source(into: Path, python: str = sys.executable) -> str:
    """Download the pinned flash-attn sdist with pip and extract its Triton rotary under `into`."""
    import os

    with tempfile.TemporaryDirectory(prefix="flash-attn-sdist-") as folder:
        subprocess.run([python, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
                        ":all:", "--no-build-isolation", "-d", folder, pinned("flash-attn")],
                       check=True, env={**os.environ, **SKIP_CUDA_BUILD})
        sdist = next(Path(folder).glob("flash_attn-*.tar.gz"))
        return extract_flash_attn(sdist, into)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("into", type=Path, help="folder on the python path of the kernels' session")
    args = parser.parse_args(argv)
    args.into.mkdir(parents=True, exist_ok=True)
    print(f"flash-attn {flash_attn_source(args.into)}: {FLASH_ATTN_MODULE} under {args.into}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
