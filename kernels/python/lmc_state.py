"""The python kernel's state, kept across kernels: snapshot after each cell, restore at start.

Runs inside the kernel (loaded by ``lmc_python_kernel.py`` when lmc names a state folder in
``LMC_STATE_DIR``), so a snapshot costs no message between lmc and the kernel:

* After each cell (IPython's ``post_run_cell``) the user's globals are pickled with
  cloudpickle (functions, classes, their instances and lambdas defined in the session come
  along; stdlib pickle where the interpreter lacks cloudpickle), modules are recorded by name.
  Each name has a file of its own, rewritten only when its value changed: a value keeps its
  identity and a fingerprint (an immutable one, a function or a class: its identity alone;
  anything else: a CRC of its pickle, whose large buffers, arrays' data, are taken out of
  band without a copy and checksummed, sampled beyond ``FULL_CHECK`` bytes).
* A value over the per-value cap, past the total cap, or one that cannot be pickled (an open
  socket, a generator) is listed in the manifest as not kept, with why.
* A global that refers to another global refers to it by name (pickle's persistent ids), so
  shared objects stay shared and a function does not carry a copy of the data it uses.
* At start (before the kernel answers lmc) the last manifest is restored; functions get the
  user namespace as their globals again. What came back and what did not goes to
  ``restored.json`` for lmc to tell the model.

Files: ``FOLDER/python/manifest.json`` (written last, atomically), ``FOLDER/python/v-*.pkl``
(one per name), ``FOLDER/python/restored.json``; 0600 in a 0700 folder. Nothing here may
raise into the user's cell: every failure becomes a line in the manifest or is dropped.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import os
import pickle
import re
import sys
import time
import types
import zlib
from collections.abc import Callable
from typing import Any, Final

try:
    import cloudpickle

    _PICKLER: Any = cloudpickle.Pickler
    PICKLER_NAME = "cloudpickle"
except ImportError:  # a --python interpreter without it: module-level things only
    _PICKLER = pickle.Pickler
    PICKLER_NAME = "pickle"

__all__ = ["StateKeeper", "install_from_environment"]

VERSION: Final = 1
#: Buffers up to this size are checksummed whole; larger ones are sampled.
FULL_CHECK: Final = 32 * 1024 * 1024
_SAMPLE: Final = 64 * 1024
_SAMPLES: Final = 16
_ATOMIC: Final = (type(None), bool, int, float, complex, str, bytes, range)
#: IPython's own history names: ``_``, ``__``, ``_i``, ``_ii``, ``_i3``, ``_3``, ``_ih``...
_IPYTHON_NAME = re.compile(r"_+|_i+|_i?\d+|_ih|_oh|_dh|In|Out|exit|quit|get_ipython")
_MAGIC: Final = b"LMCSTATE1\n"
_IN_MEMORY: Final = (io.BytesIO, io.StringIO)
_PLAIN: Final = frozenset({int, float, str, bytes, bool, type(None), complex})


def _identity_kept(value: Any) -> bool:
    """Values whose identity says they did not change: immutable ones, functions, classes."""
    if isinstance(value, _ATOMIC):
        return True
    if isinstance(value, tuple | frozenset):
        return all(isinstance(item, _ATOMIC) for item in value)
    return isinstance(value, type | types.FunctionType | types.BuiltinFunctionType)


def describe(value: Any) -> dict[str, Any]:
    """Type (and shape or length) for the model's listing."""
    kind = type(value)
    info: dict[str, Any] = {"type": kind.__name__}
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        info["shape"] = list(shape)
    elif isinstance(value, list | dict | set | tuple | frozenset):
        info["len"] = len(value)
    return info


def _checksum(data: memoryview) -> int:
    """CRC32 of ``data``; of its head, tail and ``_SAMPLES`` spread slices when large."""
    size = data.nbytes
    if size <= FULL_CHECK:
        return zlib.crc32(data)
    crc = zlib.crc32(data[:_SAMPLE])
    step = size // _SAMPLES
    for n in range(1, _SAMPLES):
        crc = zlib.crc32(data[n * step : n * step + _SAMPLE], crc)
    return zlib.crc32(data[size - _SAMPLE :], crc)


class _Pickled:
    """One value pickled: its in-band bytes and out-of-band buffers."""

    def __init__(self, inband: bytes, buffers: list[memoryview]) -> None:
        self.inband = inband
        self.buffers = buffers
        self.size = len(inband) + sum(b.nbytes for b in buffers)

    def fingerprint(self) -> str:
        crc = zlib.crc32(self.inband)
        for buffer in self.buffers:
            crc = zlib.crc32(b"%d:%d" % (buffer.nbytes, _checksum(buffer)), crc)
        return f"{crc:08x}:{self.size}"


def _pickle(value: Any, refs: dict[int, str], name: str) -> _Pickled:
    """``value`` pickled, other globals in it by reference (an alias of another name is only
    that reference)."""
    out = io.BytesIO()
    buffers: list[pickle.PickleBuffer] = []
    own = id(value) if refs.get(id(value)) == name else None

    class Pickler(_PICKLER):  # type: ignore[misc]
        def persistent_id(self, obj: Any) -> str | None:
            if type(obj) in _PLAIN:  # most objects of a large value: no more checks
                return None
            key = id(obj)
            if isinstance(obj, io.IOBase) and not isinstance(obj, _IN_MEMORY):
                # cloudpickle would keep the file's text as a StringIO: not the file.
                raise TypeError("an open file is not kept")
            return refs.get(key) if key != own else None

    Pickler(out, protocol=5, buffer_callback=buffers.append).dump(value)
    return _Pickled(out.getvalue(), [b.raw() for b in buffers])


def _write_private(path: str, parts: list[bytes | memoryview]) -> None:
    temporary = f"{path}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        for part in parts:
            out.write(part)
    os.replace(temporary, path)


def _file_for(name: str) -> str:
    return "v-" + hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:20] + ".pkl"


class StateKeeper:
    """Snapshots ``namespace`` into ``folder`` after each cell; restores it at start."""

    def __init__(
        self, namespace: dict[str, Any], hidden: Any, folder: str, max_value: int, max_total: int
    ) -> None:
        self.namespace = namespace
        self._hidden = hidden
        self.folder = os.path.join(folder, "python")
        self.max_value = max_value
        self.max_total = max_total
        #: name -> (identity, fingerprint, manifest entry)
        self._cache: dict[str, tuple[int, str, dict[str, Any]]] = {}
        self._written: tuple[Any, ...] | None = None  # the manifest's contents on disk
        self.cell = 0

    # -- snapshot -----------------------------------------------------------------------------

    def candidates(self) -> dict[str, Any]:
        """The user's globals: not IPython's, not dunders, not lmc's."""
        hidden = self._hidden
        return {
            name: value
            for name, value in list(self.namespace.items())
            if not (name.startswith("__") and name.endswith("__"))
            and not _IPYTHON_NAME.fullmatch(name)
            and (name not in hidden or hidden[name] is not value)
        }

    def snapshot(self) -> dict[str, Any]:
        """Write what changed since the last snapshot and the manifest; return the manifest."""
        started = time.perf_counter()
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        self.cell += 1
        values = self.candidates()
        modules = {n: v.__name__ for n, v in values.items() if isinstance(v, types.ModuleType)}
        refs: dict[int, str] = {}
        for name, value in values.items():
            if name not in modules and not isinstance(value, _ATOMIC):
                refs.setdefault(id(value), name)
        kept: dict[str, dict[str, Any]] = {}
        lost: dict[str, dict[str, Any]] = {}
        total = 0
        for name in sorted(values, key=lambda n: (n not in self._cache, n)):
            if name in modules:
                continue
            entry, why = self._keep(name, values[name], refs, room=self.max_total - total)
            if entry is None:
                lost[name] = {**describe(values[name]), "why": why}
                self._cache.pop(name, None)
            else:
                kept[name] = entry
                total += entry["size"]
        manifest = {
            "version": VERSION,
            "cell": self.cell,
            "pickler": PICKLER_NAME,
            "kept": kept,
            "modules": modules,
            "lost": lost,
            "seconds": round(time.perf_counter() - started, 6),  # scripts/bench_kernel_state.py
        }
        for name in set(self._cache) - set(kept):
            del self._cache[name]
        contents = (kept, modules, lost)
        if contents != self._written:  # a block that changed no name's entry writes nothing
            path = os.path.join(self.folder, "manifest.json")
            _write_private(path, [json.dumps(manifest).encode()])
            self._remove_stale({entry["file"] for entry in kept.values()})
            self._written = contents
        return manifest

    def _keep(
        self, name: str, value: Any, refs: dict[int, str], room: int
    ) -> tuple[dict[str, Any] | None, str]:
        cached = self._cache.get(name)
        if cached is not None and cached[0] == id(value) and _identity_kept(value):
            entry = cached[2]
        else:
            try:
                pickled = _pickle(value, refs, name)
            except Exception as exc:  # anything a __reduce__ may raise
                return None, f"cannot be pickled ({type(exc).__name__})"
            if pickled.size > self.max_value:
                return None, f"over the cap of {self.max_value} bytes per value"
            fingerprint = pickled.fingerprint()
            if cached is not None and cached[0] == id(value) and cached[1] == fingerprint:
                entry = cached[2]
            else:
                entry = {**describe(value), "file": _file_for(name), "size": pickled.size}
                self._write_value(entry["file"], pickled)
            self._cache[name] = (id(value), fingerprint, entry)
        if entry["size"] > room:
            return None, f"over the cap of {self.max_total} bytes in all"
        return entry, ""

    def _write_value(self, file: str, pickled: _Pickled) -> None:
        header = json.dumps(
            {"inband": len(pickled.inband), "buffers": [b.nbytes for b in pickled.buffers]}
        ).encode()
        _write_private(
            os.path.join(self.folder, file),
            [_MAGIC, header, b"\n", pickled.inband, *pickled.buffers],
        )

    def _remove_stale(self, files: set[str]) -> None:
        with contextlib.suppress(OSError):
            for file in os.listdir(self.folder):
                if file.startswith("v-") and file not in files:
                    os.unlink(os.path.join(self.folder, file))

    # -- restore ------------------------------------------------------------------------------

    def restore(self) -> dict[str, Any] | None:
        """Bring the last manifest's values back; write and return the report (None: none)."""
        try:
            with open(os.path.join(self.folder, "manifest.json"), "rb") as file:
                manifest = json.loads(file.read())
        except (OSError, ValueError):
            return None
        if not isinstance(manifest, dict) or manifest.get("version") != VERSION:
            return None
        self.cell = int(manifest.get("cell", 0))
        # A value whose unpickling kills the kernel (os._exit in a __reduce__, the memory
        # limit) would kill every kernel after it: a restore that never finished is not
        # tried again, and the next kernel starts fresh, saying why.
        marker = os.path.join(self.folder, "restoring")
        if os.path.exists(marker):
            os.unlink(marker)
            why = "the last restore ended the kernel; this one started fresh"
            report: dict[str, Any] = {
                "cell": self.cell,
                "restored": [],
                "modules": {},
                "failed": dict.fromkeys(manifest.get("kept") or {}, why),
                "lost": manifest.get("lost") or {},
            }
        else:
            _write_private(marker, [b""])
            report = _Restorer(self, manifest).run()
            os.unlink(marker)
        _write_private(os.path.join(self.folder, "restored.json"), [json.dumps(report).encode()])
        return report


class _Restorer:
    """One restore: values loaded by name, each once, references resolved on the way."""

    def __init__(self, keeper: StateKeeper, manifest: dict[str, Any]) -> None:
        self.keeper = keeper
        self.kept: dict[str, dict[str, Any]] = manifest.get("kept") or {}
        self.modules: dict[str, str] = manifest.get("modules") or {}
        self.manifest = manifest
        self.done: dict[str, Any] = {}
        self.failed: dict[str, str] = {}
        self._loading: set[str] = set()

    def run(self) -> dict[str, Any]:
        namespace = self.keeper.namespace
        before = set(namespace)
        builtins = namespace.get("__builtins__")
        for name, module in self.modules.items():
            try:
                self.done[name] = importlib.import_module(module)
            except Exception as exc:
                self.failed[name] = f"module {module} cannot be imported ({type(exc).__name__})"
        for name in sorted(self.kept):
            with contextlib.suppress(Exception):
                self.load(name)
        # Functions' own globals were merged into the namespace: the values' files win, and
        # names that were not kept (deleted since) go again.
        for name in set(namespace) - before - set(self.done):
            del namespace[name]
        namespace.update(self.done)
        if builtins is not None:
            namespace["__builtins__"] = builtins
        for name, value in self.done.items():
            entry = self.kept.get(name)
            if entry is not None:
                self.keeper._cache[name] = (id(value), "", entry)
        return {
            "cell": self.manifest.get("cell"),
            "restored": sorted(n for n in self.done if n in self.kept),
            "modules": {n: m for n, m in self.modules.items() if n in self.done},
            "failed": self.failed,
            "lost": self.manifest.get("lost") or {},
        }

    def load(self, name: str) -> Any:
        if name in self.done:
            return self.done[name]
        if name in self.failed or name not in self.kept or name in self._loading:
            why = self.failed.get(name, "not kept")
            raise pickle.UnpicklingError(f"{name}: {why}")
        self._loading.add(name)
        try:
            self.done[name] = value = self._read(self.kept[name]["file"])
        except Exception as exc:
            self.failed[name] = f"cannot be unpickled ({type(exc).__name__}: {exc})"[:200]
            raise
        finally:
            self._loading.discard(name)
        return value

    def _read(self, file: str) -> Any:
        path = os.path.join(self.keeper.folder, os.path.basename(file))
        with open(path, "rb") as handle:
            data = bytearray(handle.read())  # writable: arrays come back writable
        if not data.startswith(_MAGIC):
            raise pickle.UnpicklingError("not a state file")
        end = data.index(b"\n", len(_MAGIC))
        header = json.loads(bytes(data[len(_MAGIC) : end]))
        view = memoryview(data)
        at = end + 1
        inband = view[at : at + header["inband"]]
        at += header["inband"]
        buffers = []
        for size in header["buffers"]:
            buffers.append(view[at : at + size])
            at += size
        return self._unpickler(inband, buffers).load()

    def _unpickler(self, inband: memoryview, buffers: list[memoryview]) -> pickle.Unpickler:
        restorer = self
        namespace = self.keeper.namespace

        def make_function(
            code: types.CodeType, globals_: dict[str, Any], name: str, *rest: Any
        ) -> types.FunctionType:
            """cloudpickle's ``_make_function``, the user's namespace as the globals of what
            the session defined (its globals are the namespace, as they were)."""
            if globals_.get("__name__") == "__main__":
                globals_ = namespace
            return types.FunctionType(code, globals_, name, *rest)

        class Unpickler(pickle.Unpickler):
            def persistent_load(self, pid: Any) -> Any:
                return restorer.load(str(pid))

            def find_class(self, module: str, name: str) -> Any:
                if module.startswith("cloudpickle") and name == "_make_function":
                    return make_function
                return super().find_class(module, name)

        return Unpickler(io.BytesIO(inband), buffers=buffers)


def install_from_environment(shell: Any, environ: dict[str, str] | None = None) -> None:
    """Keep ``shell``'s state when lmc asked for it (``LMC_STATE_DIR``: the folder;
    ``LMC_STATE_CAPS``: ``MAX_VALUE,MAX_TOTAL``; ``LMC_STATE_RESTORE``: 1 to
    restore first). The variables are taken out of the code's environment."""
    env = os.environ if environ is None else environ
    folder = env.pop("LMC_STATE_DIR", "")
    caps = env.pop("LMC_STATE_CAPS", "")
    restore = env.pop("LMC_STATE_RESTORE", "") == "1"
    if not os.path.isabs(folder):  # unset, or not lmc's: never a folder of the working dir
        return
    try:
        max_value, max_total = (int(n) for n in caps.split(","))
    except ValueError:
        max_value, max_total = 64 << 20, 256 << 20
    keeper = StateKeeper(shell.user_ns, shell.user_ns_hidden, folder, max_value, max_total)
    if restore:
        try:
            keeper.restore()
        except Exception as exc:  # never keep the kernel from starting
            print(f"lmc: the kernel state was not restored: {exc}", file=sys.stderr)
    shell.events.register("post_run_cell", _after_cell(keeper))


def _after_cell(keeper: StateKeeper) -> Callable[[Any], None]:
    def after(result: Any) -> None:
        try:
            keeper.snapshot()
        except BaseException as exc:  # a full disk, a Ctrl-C: the next cell tries again
            with contextlib.suppress(Exception):
                print(f"lmc: the kernel state was not saved: {exc}", file=sys.__stderr__)

    return after
