"""JSON-RPC lines in: what each one is, or the error it is answered with."""

from __future__ import annotations

import os

from lmc.acp.wire import Incoming, RpcError, Wire, parse_line


def test_lines_are_told_apart_and_bad_ones_get_their_codes() -> None:
    assert parse_line(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}') == Incoming(
        "request", 1, "m", {"a": 1}
    )
    assert parse_line(b'{"jsonrpc":"2.0","method":"n"}') == Incoming("notification", None, "n")
    response = parse_line(b'{"jsonrpc":"2.0","id":3,"result":{"x":1}}')
    assert isinstance(response, Incoming) and response.kind == "response"
    cases = {
        b"{not json": -32700,
        b"\xff\xfe": -32700,
        b"[]": -32600,
        b'{"id":1,"method":"m"}': -32600,
        b'{"jsonrpc":"2.0","id":{},"method":"m"}': -32600,
        b'{"jsonrpc":"2.0","id":1}': -32600,
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}': -32600,
    }
    for line, code in cases.items():
        answer = parse_line(line)
        assert isinstance(answer, tuple), line
        assert isinstance(answer[1], RpcError) and answer[1].code == code, line


def test_a_request_of_lmc_settles_with_the_client_answer_or_when_the_client_goes() -> None:
    read_fd, write_fd = os.pipe()
    wire = Wire(write_fd)
    asked = wire.request("session/request_permission", {"x": 1})
    line = os.read(read_fd, 65536)
    assert b'"id":1' in line and line.endswith(b"\n")
    wire.settle(Incoming("response", 1, result={"ok": True}))
    assert asked.wait(0) and asked.result == {"ok": True}
    pending = wire.request("other", {})
    wire.close()
    assert pending.wait(0) and pending.error is not None
    os.close(read_fd)
    os.close(write_fd)
