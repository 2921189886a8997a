"""``statemeta tdengine build``: TDengine's upstream files, checked to be the seed's, compiled
unmodified with gcc against the project's stub headers and shim into one driver executable.

The build reads the tree where it lies and writes only under ``out`` (by default a cache
directory outside the tree, so a read-only tree builds): ``out/<key>/driver``, where the key
hashes everything the executable is made of (the blob ids, the shim's sources, the flags), so
an unchanged build is reused and a changed shim or flag builds anew."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs

from statemeta.errors import TDengineBuildError
from statemeta.tdengine.sources import COMPILED, INCLUDE_DIRS, check_tree

__all__ = ["SANITIZE_FLAGS", "SHIM", "Build", "build", "default_out"]

SHIM = Path(__file__).resolve().parent / "shim"
"""The project's own C: stub headers (``include/``) and the shim and driver (``*.c``)."""

SANITIZE_FLAGS = (
    "-fsanitize=address,undefined",
    "-fno-sanitize=alignment",
    "-fno-sanitize-recover=all",
)
"""AddressSanitizer and UndefinedBehaviorSanitizer, each finding fatal (so it is reported).
Not alignment: tencode.h stores integers at unaligned addresses on every encode (undefined
behaviour that x86 tolerates; docs/tdengine.md lists it), which would stop every register."""

_FLAGS = ("-std=gnu11", "-g", "-O1", "-fno-omit-frame-pointer", "-pthread", "-w")
"""-w: the upstream files are compiled as they are; their warnings are not the project's."""


@attrs.frozen
class Build:
    """A driver executable and how it came about."""

    driver: Path
    seconds: float
    cached: bool


def default_out() -> Path:
    """The cache directory builds go to unless told: ``$XDG_CACHE_HOME`` (or ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "statemeta" / "tdengine"


def _key(blobs: dict[str, str], flags: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for path, blob in sorted(blobs.items()):
        digest.update(f"{path} {blob}\n".encode())
    for file in sorted(SHIM.rglob("*.[ch]")):
        digest.update(file.relative_to(SHIM).as_posix().encode() + b"\0" + file.read_bytes())
    digest.update(" ".join(flags).encode())
    return digest.hexdigest()[:16]


def _compile(gcc: str, flags: list[str], source: Path, obj: Path) -> None:
    done = subprocess.run(
        [gcc, *flags, "-c", str(source), "-o", str(obj)], capture_output=True, text=True
    )
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["(no message)"])[0]
        raise TDengineBuildError(str(source), f"gcc refused it: {first}")


def build(tree: Path, out: Path | None = None, *, sanitize: bool = True) -> Build:
    """The driver for ``tree``, built under ``out`` unless an identical build is there."""
    started = time.perf_counter()
    blobs = check_tree(tree)
    gcc = shutil.which("gcc")
    if gcc is None:
        raise TDengineBuildError("gcc", "not found on PATH (the only toolchain statemeta uses)")
    flags = [*_FLAGS, *(SANITIZE_FLAGS if sanitize else ())]
    home = (out or default_out()) / _key(blobs, tuple(flags))
    driver = home / "driver"
    if driver.is_file():
        return Build(driver, time.perf_counter() - started, cached=True)
    includes = [f"-I{SHIM / 'include'}", *(f"-I{tree / d}" for d in INCLUDE_DIRS)]
    sources = [tree / p for p in COMPILED] + sorted(SHIM.glob("*.c"))
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=home) as scratch:
        objs = [Path(scratch) / f"{i}-{s.stem}.o" for i, s in enumerate(sources)]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            pairs = zip(sources, objs, strict=True)
            jobs = [pool.submit(_compile, gcc, flags + includes, s, o) for s, o in pairs]
            for job in jobs:
                job.result()
        linked = Path(scratch) / "driver"
        done = subprocess.run(
            [gcc, *flags, *map(str, objs), "-o", str(linked), "-lm"], capture_output=True, text=True
        )
        if done.returncode != 0:
            first = (done.stderr.strip().splitlines() or ["(no message)"])[0]
            raise TDengineBuildError("gcc", f"the link failed: {first}")
        linked.replace(driver)
    return Build(driver, time.perf_counter() - started, cached=False)
