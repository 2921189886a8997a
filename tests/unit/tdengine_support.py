"""The TDengine tree the adapter's tests build from: STATEMETA_TDENGINE_SRC, or the shared
copy beside the checkout. Missing, a test fails in CI and skips elsewhere, with the reason."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def tdengine_tree() -> Path:
    tree = Path(
        os.environ.get("STATEMETA_TDENGINE_SRC") or ROOT.parent / "shared/tdengine/63494de7"
    )
    problem = None
    if not tree.is_dir():
        problem = f"no TDengine tree at {tree} (set STATEMETA_TDENGINE_SRC)"
    elif shutil.which("gcc") is None:
        problem = "gcc is not on PATH"
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the TDengine adapter's inputs: {problem}")
        pytest.skip(problem)
    return tree
