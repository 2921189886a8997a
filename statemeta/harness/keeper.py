"""The keeper: runs the implementation under test and ends its whole process tree.

Theory of operation
-------------------
SubprocessAdapter does not start the implementation itself: it starts this file as a script
(``python -I -S keeper.py FD COMMAND...``: by path and standard library only, so it starts in
milliseconds), with the harness's pipes as its stdin, stdout and stderr and one end of a socket
pair as FD (the control socket).

On Linux the keeper first makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``):
a process of the implementation whose parent exits (a grandchild that called ``setsid``, a
daemon that forked twice) is re-parented to the keeper instead of to init. So the keeper's
descendants are exactly the implementation's process tree, whatever sessions and process
groups it made. The keeper starts COMMAND in a new session with the pipes, lets go of its own
copies (so the harness still sees end-of-file when the implementation closes its stdout),
reports ``started PID`` (or ``cannot start: why``) on the control socket, and waits for the
first of:

- the implementation exits;
- the harness closes the control socket: asked to end it, or the harness died (the kernel
  closes a dead process's sockets, even after SIGKILL);
- the keeper gets SIGTERM, SIGINT or SIGHUP.

Then it ends the tree: SIGKILL to the implementation's process group, then, until it has no
child left, SIGKILL to every descendant it finds in /proc and reaping (a process forked during
the kill is re-parented to the keeper, so the next round finds it). It exits with the
implementation's own status (its exit code, or dying of the same signal), which the harness
reports as its child's.

What it cannot do: end a tree whose keeper was killed by SIGKILL (the implementation itself
then gets SIGKILL through ``PR_SET_PDEATHSIG``; its descendants do not), find a process that
left the tree through another subreaper or PID namespace of the implementation's own, or (not
on Linux) reach anything beyond the implementation's process group.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import resource
import select
import signal
import socket
import subprocess
import sys
from types import FrameType

__all__ = ["die_with_parent", "end_tree", "main"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_ENDING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_CANNOT_START = 127


class _Ending(Exception):
    """Raised by the handler of SIGTERM, SIGINT and SIGHUP: end the tree now."""


def _prctl(option: int, value: int) -> None:
    """prctl(2) on Linux; elsewhere nothing (the process group is then all the keeper ends)."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def die_with_parent(parent: int) -> None:
    """In a child of ``parent`` (the implementation before exec, an explorer's worker): SIGKILL
    when the parent dies, even by SIGKILL; at once if it died before this call (the child was
    then re-parented). On Linux; elsewhere nothing."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if sys.platform == "linux" and os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


def _parents() -> dict[int, int]:
    """Every process's parent, from /proc (empty where there is no /proc)."""
    parents: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as stat:
                    text = stat.read()
            except OSError:
                continue  # it exited meanwhile
            # pid (comm) state ppid ...: comm may hold spaces and parentheses
            parents[int(name)] = int(text[text.rindex(b")") + 2 :].split()[1])
    return parents


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    frontier = [root]
    while frontier:
        below = children.get(frontier.pop(), [])
        found.extend(below)
        frontier.extend(below)
    return found


def end_tree(main_pid: int) -> int | None:
    """SIGKILLs the implementation's process group and every descendant of this process, and
    reaps them all; returns the implementation's wait status if this call reaped it."""
    status: int | None = None
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(main_pid, signal.SIGKILL)
    while True:
        for pid in _descendants(os.getpid()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            pid, wait_status = os.waitpid(-1, 0)  # every child was just killed: no long wait
        except ChildProcessError:
            return status  # no child left, so no descendant either
        while pid:
            if pid == main_pid:
                status = wait_status
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break


def _reap(main_pid: int) -> int | None:
    """Reaps every child that exited (orphans re-parented here included); the implementation's
    wait status if it was among them."""
    status: int | None = None
    while True:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == main_pid:
            status = wait_status


def _exit_like(wait_status: int | None) -> None:
    """Exits as the implementation did: its exit code, or killed by the same signal."""
    code = os.waitstatus_to_exitcode(wait_status) if wait_status is not None else 1
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # its core, not the keeper's
        os.kill(os.getpid(), -code)
        code = 128 - code  # a signal whose default is not to end the process
    os._exit(code)


def _on_ending_signal(signum: int, frame: FrameType | None) -> None:
    for number in _ENDING_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    raise _Ending(signum)


def main(argv: list[str]) -> None:
    """``keeper.py FD COMMAND...``: see the module's docstring."""
    control = socket.socket(fileno=int(argv[1]))
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)  # SIGCHLD (any child's exit) wakes the select below
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    for number in _ENDING_SIGNALS:
        signal.signal(number, _on_ending_signal)
    try:
        child = subprocess.Popen(
            argv[2:], start_new_session=True,
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
        )
    except (OSError, ValueError, subprocess.SubprocessError) as error:
        control.sendall(f"cannot start: {error}\n".encode())
        os._exit(_CANNOT_START)
    control.sendall(f"started {child.pid}\n".encode())
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)  # the pipes are the implementation's alone now
    status: int | None = None
    try:
        while status is None:
            readable, _, _ = select.select([control.fileno(), wake_read], [], [])
            if control.fileno() in readable and not control.recv(4096):
                break  # the harness ends it (or died)
            if wake_read in readable:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_read, 4096)
            status = _reap(child.pid)
    except _Ending:
        pass
    for number in _ENDING_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    ended = end_tree(child.pid)
    _exit_like(status if status is not None else ended)


if __name__ == "__main__":
    main(sys.argv)
