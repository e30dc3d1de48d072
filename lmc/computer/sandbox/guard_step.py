"""The first program in a sandbox without network: it puts the connect guard's seccomp filter on
itself, hands the filter's listener to lmc, and becomes the kernel.

Run inside bubblewrap as ``python -I -S guard_step.py PROGRAM_FD SOCKET_FD -- ARGV...``
(standard library only: no site, no lmc). ``PROGRAM_FD`` holds the compiled filter
(:mod:`.connect_guard`); the listener that ``seccomp(SECCOMP_SET_MODE_FILTER,
SECCOMP_FILTER_FLAG_NEW_LISTENER)`` returns goes to lmc over ``SOCKET_FD`` (SCM_RIGHTS), and
every descriptor of the guard is closed before ``exec``: the code never holds the listener
(a process that held it could answer its own connect). Without the filter nothing runs.
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


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("lmc guard_step: usage: PROGRAM_FD SOCKET_FD -- ARGV...", file=sys.stderr)
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
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"lmc: could not run {command[0]}: {exc}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
