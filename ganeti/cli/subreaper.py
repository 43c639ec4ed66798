"""Run a command that starts daemons under a process that reaps their orphans at once.

``python -m ganeti.cli.subreaper -- CMD [ARG...]`` runs ``CMD`` (a shell script
that starts ``virtlogd -d`` and ``libvirtd -d``, say) and exits with its status,
as running ``CMD`` itself would, with its output passed through.  Meanwhile a
process of its own stays behind as a Linux *child subreaper*
(``PR_SET_CHILD_SUBREAPER``): every process that ``CMD`` starts and that loses
its parent (a daemon that forked away, each QEMU that libvirtd double-forks) is
re-parented to it instead of the machine's PID 1, and it collects each one the
moment it ends.  It exits when the last of them has ended.

Why: libvirtd reports a guest's crash only once the dead QEMU is gone, and a
zombie is not gone until its parent collects it.  On a real host PID 1
(systemd) does that at once; the PID 1 of some machines (this project's CI
sandboxes) collects orphans about every 1.5 s, which a node's libvirtd then
adds to every crash report (measured: a ``kill -9`` of QEMU seen by the master
after 1.6 s instead of 0.1 s).  ``ganeti-vcluster`` starts each namespaced
node's libvirt daemons through this module.

It imports nothing but the standard library: it runs in the virtual cluster's
namespaces, once per node, for as long as the node's libvirtd runs.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Sequence

#: prctl(2) option that makes the calling process a child subreaper.
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Make this process the subreaper of its descendants (OSError if the kernel
    refuses)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(err)}")


def exit_code(status: int) -> int:
    """A wait status as a shell reports it (128 + the signal for a killed process)."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def reap_all() -> None:
    """Collect every child (re-parented orphans included) as it ends, until none
    is left."""
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return
        except InterruptedError:  # pragma: no cover - PEP 475 retries it
            continue


def _detach_stdio() -> None:
    """Nothing of the caller's stays open here: whoever captures the command's
    output sees its end when the command ends, not when the last daemon does."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if null > 2:
        os.close(null)


def run(argv: Sequence[str]) -> int:
    """Start the subreaper, run ``argv`` under it; ``argv``'s exit code (127 if it
    cannot be run).  Returns in the caller's process; the subreaper lives on."""
    read_end, write_end = os.pipe()
    reaper = os.fork()
    if reaper == 0:  # the subreaper
        os.close(read_end)
        code = 1
        try:
            os.setsid()  # no signal of the caller's terminal reaches the node's daemons
            become_subreaper()
            command = os.fork()
            if command == 0:
                os.close(write_end)
                try:
                    os.execvp(argv[0], list(argv))
                except OSError as err:
                    print(f"subreaper: cannot run {argv[0]}: {err.strerror}", file=sys.stderr)
                os._exit(127)
            _, status = os.waitpid(command, 0)
            code = exit_code(status)
        except OSError as err:
            print(f"subreaper: {err}", file=sys.stderr)
            code = 1
        finally:
            os.write(write_end, bytes([code & 0xff]))
            os.close(write_end)
        _detach_stdio()
        reap_all()
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        answer = f.read(1)
    return answer[0] if answer else 1


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ganeti.cli.subreaper -- CMD [ARG...]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args or args[0].startswith("-"):
        print("usage: python -m ganeti.cli.subreaper -- CMD [ARG...]\n"
              "Run CMD; the processes it leaves behind are collected at once as they end "
              "(a Linux child subreaper that exits after the last of them).",
              file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
