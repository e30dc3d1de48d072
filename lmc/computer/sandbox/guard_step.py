"""The first program in a sandbox without network: it puts the connect guard's seccomp filter on
itself, hands the filter's listener to lmc, and becomes the kernel.

Run inside bubblewrap as ``python -I -S guard_step.py PROGRAM_FD SOCKET_FD -- ARGV...``
(standard library only: no site, no lmc). ``PROGRAM_FD`` holds the compiled filter
(:mod:`.connect_guard`); the listener that ``seccomp(SECCOMP_SET_MODE_FILTER,
SECCOMP_FILTER_FLAG_NEW_LISTENER)`` returns goes to lmc over ``SOCKET_FD`` (SCM_RIGHTS), and
every descriptor of the guard is closed before ``exec``: the code never holds the listener
(a process that held it could answer its own connect). Without the filter nothing runs.

``--in-place`` (lmc's wrapper kernels, whose Python only relays bash or node): when the command
is ``env --default-signal=INT PYTHON SCRIPT ARGS...`` for this very interpreter, the step runs
SCRIPT in its own process instead of starting a second Python (~8 ms of the first block):
SIGINT back to its default as ``env`` would set it, then site-packages, PYTHONPATH and the
script's folder on ``sys.path`` as a fresh interpreter has them, all under the filter already.
"""

import _socket  # not socket.py: its enum import is a fifth of this step's start-up
import array
import ctypes
import os
import sys

_SECCOMP = {"x86_64": 317, "aarch64": 277}
_SET_MODE_FILTER = 1
_FLAG_NEW_LISTENER = 1 << 3
_PR_SET_NO_NEW_PRIVS = 38


class _Program(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _install(program: bytes) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    code = ctypes.create_string_buffer(program, len(program))
    fprog = _Program(len(program) // 8, ctypes.cast(code, ctypes.c_void_p))
    number = _SECCOMP[os.uname().machine]
    listener = libc.syscall(number, _SET_MODE_FILTER, _FLAG_NEW_LISTENER, ctypes.byref(fprog))
    if listener < 0:
        raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)")
    return int(listener)


def _python_script(command: list[str]) -> list[str] | None:
    """SCRIPT and its arguments when ``command`` runs one with this interpreter, else None."""
    runs_script = len(command) >= 4 and command[3].endswith(".py")
    if runs_script and command[:3] == ["env", "--default-signal=INT", sys.executable]:
        return command[3:]
    return None


def _run_in_place(script: list[str]) -> int:
    """Run ``script`` (SCRIPT ARGS...) here as ``python SCRIPT ARGS...`` would."""
    import runpy
    import signal
    import site

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    site.main()
    extra = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    folder = os.path.dirname(os.path.realpath(script[0]))  # noqa: PTH120 - pathlib costs ms here
    sys.path[:0] = [folder, *extra]
    sys.argv = list(script)
    runpy.run_path(script[0], run_name="__main__")
    return 0


def main(argv: list[str]) -> int:
    in_place = argv[:1] == ["--in-place"]
    argv = argv[1:] if in_place else argv
    if len(argv) < 4 or argv[2] != "--":
        print(
            "lmc guard_step: usage: [--in-place] PROGRAM_FD SOCKET_FD -- ARGV...", file=sys.stderr
        )
        return 2
    program_fd, socket_fd, command = int(argv[0]), int(argv[1]), argv[3:]
    try:
        program = _read_all(program_fd)
        os.close(program_fd)
        listener = _install(program)
        channel = _socket.socket(fileno=socket_fd)
        rights = array.array("i", [listener])
        channel.sendmsg([b"L"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
        channel.close()
        os.close(listener)
    except (OSError, KeyError) as exc:
        print(f"lmc: the sandbox's connect guard could not start: {exc}", file=sys.stderr)
        return 126
    script = _python_script(command) if in_place else None
    if script is not None:
        return _run_in_place(script)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"lmc: could not run {command[0]}: {exc}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
