"""The wheel as a user installs it (issue 32: the doc commands of an installed wheel ended in a
``FileNotFoundError`` traceback, their default pointing into site-packages).

The wheel is built from the checkout (``pip wheel --no-deps``, the build backend fetched by pip
as for any install) and installed into a fresh virtual environment, whose dependencies are this
environment's (a ``.pth`` line: nothing is downloaded but the backend). Every command runs from
an empty directory, so nothing of the checkout is importable. Outside CI a build that cannot
fetch its backend skips; under CI (``CI`` set, as .ci/run does) it fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from statemeta import __version__
from statemeta.cli_bench import NOT_INSTALLED

ROOT = Path(__file__).resolve().parents[2]


def _run(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fresh environment's bin/ with the wheel installed."""
    root = tmp_path_factory.mktemp("wheel")
    built = _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", root / "dist",
                 ROOT, cwd=root)
    if built.returncode != 0:
        message = f"the wheel did not build: {built.stderr.strip()[-1000:]}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    (wheel,) = (root / "dist").glob("statemeta-*.whl")
    fresh = root / "env"
    venv.EnvBuilder(with_pip=False).create(fresh)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(fresh), "platbase": str(fresh)}))
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    done = _run(sys.executable, "-m", "pip", "--python", fresh / "bin" / "python", "install",
                "-q", "--no-deps", wheel, cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]
    return fresh / "bin"


def _one_line_refusal(done: subprocess.CompletedProcess[str], prefix: str, says: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"{prefix}: ") and says in done.stderr, done.stderr


def test_the_installed_package_is_the_wheels(installed: Path, tmp_path: Path) -> None:
    done = _run(installed / "python", "-c", "import statemeta; print(statemeta.__file__)",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(installed.parent)
    version = _run(installed / "statemeta", "--version", cwd=tmp_path)
    assert (version.returncode, version.stdout) == (0, f"statemeta {__version__}\n")


def test_the_doc_commands_refuse_in_one_line_and_take_the_docs_they_are_given(
    installed: Path, tmp_path: Path
) -> None:
    _one_line_refusal(_run(installed / "statemeta", "spec", "--check-docs", cwd=tmp_path),
                      "statemeta spec", "--docs DIR")
    _one_line_refusal(_run(installed / "statemeta", "spec", "--write-docs", cwd=tmp_path),
                      "statemeta spec", "--docs DIR")
    checked = _run(installed / "statemeta", "spec", "--check-docs", "--docs", ROOT / "docs",
                   cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    _one_line_refusal(_run(installed / "python", "-m", "statemeta.serve", "--write-doc",
                           cwd=tmp_path), "python -m statemeta.serve", "--doc FILE")
    copy = tmp_path / "harness-protocol.md"
    copy.write_text((ROOT / "docs" / "harness-protocol.md").read_text(encoding="utf-8"))
    written = _run(installed / "python", "-m", "statemeta.serve", "--write-doc", "--doc", copy,
                   cwd=tmp_path)
    assert (written.returncode, written.stdout) == (0, f"up to date: {copy}\n"), written.stderr


def test_the_benchmarks_are_not_in_the_wheel(installed: Path, tmp_path: Path) -> None:
    done = _run(installed / "statemeta", "bench", "--quick", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip() == NOT_INSTALLED, done.stderr
