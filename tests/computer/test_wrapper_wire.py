"""The lean kernels' wire codec (kernels/lmc_wrapper/wire.py) against jupyter_client's Session,
both ways: what one signs the other reads, and a wrong key, a replay or garbage is refused."""

from __future__ import annotations

import sys

import pytest
from jupyter_client.session import Session
from support.kernel_testing import KERNELS

sys.path.insert(0, str(KERNELS))

from lmc_wrapper.wire import DELIMITER, WireError, WireSession

KEY = b"a-secret-key"


def test_session_reads_what_the_codec_packs() -> None:
    wire = WireSession(KEY)
    session = Session(key=KEY)
    request = session.serialize(session.msg("execute_request", {"code": "echo é"}))
    parent = WireSession(KEY).unpack(request).header  # as the kernel has it: JSON, dates as text
    frames = wire.pack("stream", {"name": "stdout", "text": "é ✓\n"}, parent, idents=[b"topic"])
    idents, rest = Session(key=KEY).feed_identities(frames)
    assert idents == [b"topic"]
    message = Session(key=KEY).deserialize(rest)
    assert message["msg_type"] == "stream"
    assert message["content"] == {"name": "stdout", "text": "é ✓\n"}
    assert message["parent_header"]["msg_id"] == parent["msg_id"]
    assert message["header"]["version"] == "5.3"
    assert message["header"]["session"] == wire.session_id


def test_the_codec_reads_what_session_sends() -> None:
    session = Session(key=KEY)
    sent = session.msg("kernel_info_request", {})
    frames = [b"client-id", *session.serialize(sent)]
    message = WireSession(KEY).unpack(frames)
    assert message.idents == [b"client-id"]
    assert message.msg_type == "kernel_info_request"
    assert message.header["msg_id"] == sent["header"]["msg_id"]
    assert message.content == {}


def test_a_wrong_key_a_replay_and_garbage_are_refused() -> None:
    frames = Session(key=KEY).serialize(Session(key=KEY).msg("kernel_info_request", {}))
    with pytest.raises(WireError, match="signature"):
        WireSession(b"another key").unpack(frames)
    wire = WireSession(KEY)
    wire.unpack(frames)
    with pytest.raises(WireError, match="replayed"):
        wire.unpack(frames)
    with pytest.raises(WireError, match="delimiter"):
        wire.unpack([b"no delimiter here"])
    unsigned = WireSession(b"")
    with pytest.raises(WireError, match="JSON"):
        unsigned.unpack([DELIMITER, b"", b"{", b"{}", b"{}", b"{}"])
    with pytest.raises(WireError, match="parts"):
        unsigned.unpack([DELIMITER, b"", b"{}"])


def test_an_empty_key_means_no_signature() -> None:
    frames = WireSession(b"").pack("status", {"execution_state": "idle"})
    assert frames[1] == b""
    assert Session(key=b"").deserialize(frames[1:])["content"] == {"execution_state": "idle"}


def test_an_unknown_signature_scheme_is_refused() -> None:
    with pytest.raises(WireError, match="scheme"):
        WireSession(KEY, "rsa-sha256")


@pytest.mark.parametrize("scheme", ["hmac-sha256", "hmac-sha512", "hmac-md5"])
@pytest.mark.parametrize("key", [b"k", KEY, bytes(range(256)) * 2])  # the last: over a block
def test_signatures_are_the_standard_hmac(scheme: str, key: bytes) -> None:
    """The codec signs without hmac/hashlib for SHA-256 (they load OpenSSL into every kernel):
    the signature is still RFC 2104's, as Python's hmac computes it, for any key length."""
    import hashlib
    import hmac

    parts = [b'{"msg_id": "1"}', b"{}", b"{}", '{"text": "é"}'.encode()]
    expected = hmac.new(key, b"".join(parts), getattr(hashlib, scheme.split("-")[1]))
    assert WireSession(key, scheme).sign(parts) == expected.hexdigest().encode()


def test_the_header_date_is_an_iso_time_in_utc() -> None:
    from datetime import UTC, datetime

    date = WireSession(KEY).header("status")["date"]
    parsed = datetime.fromisoformat(date)
    assert parsed.utcoffset() is not None and not parsed.utcoffset()
    assert abs((datetime.now(UTC) - parsed).total_seconds()) < 3600  # not a fixed or local time


def test_the_shell_kernel_loads_no_module_it_can_do_without() -> None:
    """What the shell kernel imports to start (its start is on the way of the first block,
    and every module is private memory of its process): no OpenSSL, no shutil (bz2, lzma),
    no tempfile, pathlib, dataclasses (inspect, ast), datetime or traceback; no pyzmq (its
    sockets are spoken by lmc_wrapper.zmtp) and no typing (annotations only)."""
    import subprocess

    script = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]];"
        "import lmc_shell_kernel; print(' '.join(sorted(sys.modules)))"
    )
    shell = KERNELS / "lmc_shell"
    done = subprocess.run(
        [sys.executable, "-c", script, str(shell), str(KERNELS)],
        capture_output=True, text=True, timeout=60, check=True, cwd=shell,
    )  # fmt: skip
    loaded = set(done.stdout.split())
    assert "lmc_wrapper.base" in loaded
    avoidable = {"_hashlib", "hmac", "shutil", "bz2", "lzma", "tempfile", "pathlib"}
    avoidable |= {"dataclasses", "inspect", "ast", "datetime", "traceback", "zmq", "typing"}
    assert not loaded & avoidable
