"""The child process that holds TDengine's compiled code (shim/driver.c), and its line protocol.

Each request is one line, each answer one line: ``= VALUE``, or ``! PROBLEM`` for a line the
driver refuses. The child's stderr goes to a file: when the child dies in a call (a sanitizer
report, a failed ASSERT, a signal), the call raises CompiledCodeFault with the report's first
line, so the finding reaches the harness as an answer, never as a dead pipe."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from statemeta.errors import CompiledCodeFault

__all__ = ["Driver", "finding_of"]

_ENVIRONMENT = {
    # leaks at exit are not findings (the seed frees little at close); a report exits the child
    "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:exitcode=86",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}

_FINDINGS = (
    re.compile(r"ERROR: (AddressSanitizer: .*?)(?: on address| \(pc|$)"),
    re.compile(r"runtime error: .*"),
    re.compile(r"statemeta-shim: .*"),
)


def finding_of(stderr: str, returncode: int | None) -> str:
    """The first line of a sanitizer's or the shim's report in ``stderr``, where it shows."""
    for pattern in _FINDINGS:
        found = pattern.search(stderr)
        if found:
            where = re.search(r"#0 0x[0-9a-f]+ in (\S+) (\S+)", stderr[found.end() :])
            at = f" in {where.group(1)} at {Path(where.group(2)).name}" if where else ""
            return f"{found.group(1) if found.groups() else found.group(0)}{at}".strip()
    return f"the compiled code's process ended (exit {returncode}) with no report"


class Driver:
    """One running driver: a fresh instance of TDengine's code, in a directory of its own."""

    def __init__(self, executable: Path) -> None:
        self.executable = executable
        self.home = tempfile.TemporaryDirectory(prefix="statemeta-tdengine-")
        self._spawn()

    def _spawn(self) -> None:
        self._stderr = open(Path(self.home.name) / "stderr", "w+")  # noqa: SIM115 (kept open)
        self._process = subprocess.Popen(
            [str(self.executable)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env={**os.environ, **_ENVIRONMENT},
        )

    @property
    def meta_dir(self) -> Path:
        return Path(self.home.name) / "meta"

    def ask(self, line: str, operation: str) -> str:
        """The answer to ``line`` (after ``= ``); CompiledCodeFault if the child died in it."""
        assert self._process.stdin is not None and self._process.stdout is not None
        try:
            self._process.stdin.write(line + "\n")
            self._process.stdin.flush()
            answer = self._process.stdout.readline()
        except (BrokenPipeError, OSError):
            answer = ""
        if answer.startswith("="):  # "= VALUE", or "=" for an empty answer
            return answer[1:].strip()
        if answer.startswith("! "):
            raise ValueError(f"the driver refused {line!r}: {answer[2:].strip()}")
        returncode = self._process.wait(timeout=10)
        self._stderr.seek(0)
        raise CompiledCodeFault(finding_of(self._stderr.read(), returncode), operation)

    def crash(self) -> None:
        """Kills the child as a crash does (no close: the open transaction, the timers and the
        planned faults die with it) and starts a fresh one in the same directory, whose meta
        files hold the last commit."""
        self._end()
        self._spawn()

    def close(self) -> None:
        """Ends the child (calls still waiting in the C end with it) and removes its files."""
        self._end()
        self.home.cleanup()

    def _end(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout, self._stderr):
            if stream is not None:
                stream.close()
