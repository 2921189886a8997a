"""statemeta report's pages in a real browser: Debian's headless chromium loads each of a
failing check, a passing explore and a failing concurrent history with no console error, the
page's own self-check finds every section drawn, and a screenshot is taken.

Without chromium the tests skip, except under CI (``CI`` set, as .ci/run does, which installs
chromium): there a missing browser fails."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from statemeta.tools.report import write_report
from tests.unit.report_support import CONCURRENT_TRACE, failing_check, passing_explore

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--hide-scrollbars"]
WINDOW = (1280, 900)
CONSOLE = re.compile(r":CONSOLE[:(]")
"""How chromium's stderr log (--enable-logging=stderr) marks a page's console message."""


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs it): the report's browser "
                        "test cannot run")
        pytest.skip("chromium is not installed (apt-get install -y chromium chromium-driver)")
    return found


def _browse(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_chromium(), *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr",
         "--v=0", *extra, page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    _chromium()
    directory = tmp_path_factory.mktemp("pages")
    sources = {"check": failing_check(directory), "explore": passing_explore(directory),
               "concurrent": CONCURRENT_TRACE}
    out = {}
    for name, source in sources.items():
        out[name] = directory / f"{name}.html"
        write_report(source, out[name])
    return out


EXPECTED = {
    "check": ("lifecycle", "roles", "coverage", "counterexample-1"),
    "explore": ("lifecycle", "roles", "depths"),
    "concurrent": ("lanes",),
}


def _dom(page: Path, profile: Path) -> str:
    loaded = _browse(page, profile, "--dump-dom")
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    console = [line for line in loaded.stderr.splitlines() if CONSOLE.search(line)]
    assert not console, console
    return loaded.stdout


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_page_loads_with_every_section_drawn(
    name: str, pages: dict[str, Path], tmp_path: Path
) -> None:
    dom = _dom(pages[name], tmp_path / "profile")
    assert re.search(r'id="selfcheck"[^>]*data-ok="1"[^>]*>selfcheck: ok<', dom), dom[:2000]
    for section in EXPECTED[name]:
        assert f'data-section="{section}"' in dom
    assert dom.count("<svg") >= len(EXPECTED[name])


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_screenshot_of_the_page(name: str, pages: dict[str, Path], tmp_path: Path) -> None:
    shot = tmp_path / f"{name}.png"
    taken = _browse(pages[name], tmp_path / "profile", f"--screenshot={shot}",
                    f"--window-size={WINDOW[0]},{WINDOW[1]}")
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    assert _png_size(shot) == WINDOW
    assert shot.stat().st_size > 20_000  # drawn: a blank page of this size is a few kB


def test_a_script_error_fails_the_self_check_and_shows_on_the_console(
    pages: dict[str, Path], tmp_path: Path
) -> None:
    """The two checks above can fail: a page whose script throws."""
    broken = tmp_path / "broken.html"
    page = pages["concurrent"].read_text()
    broken.write_text(page.replace("</body>", "<script>noSuchFunction()</script></body>"))
    loaded = _browse(broken, tmp_path / "profile", "--dump-dom")
    assert 'data-ok="0"' in loaded.stdout and "selfcheck: FAILED" in loaded.stdout
    assert "noSuchFunction is not defined" in loaded.stdout
    assert any(CONSOLE.search(line) for line in loaded.stderr.splitlines())
