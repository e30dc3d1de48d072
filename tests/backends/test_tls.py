"""An https:// server's certificate is verified; an http:// server costs no TLS set-up.

The server is the recorded hosted endpoint (support.recorded_servers) behind TLS with a
certificate from a throwaway authority (trustme): lmc refuses it in one line until that
authority is trusted (``SSL_CERT_FILE``, which httpx honours), and then talks to it.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme
from support.recorded_servers import CODE, HOSTED_KEY, SERVERS, serving

from lmc.backends import BackendConfig, open_backend
from lmc.backends._http import make_client
from lmc.backends._wire import Client
from lmc.errors import ServerError

PROMPT = "<|start|>user<|message|>hello<|end|><|start|>assistant"


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_server(authority: trustme.CA) -> Iterator[str]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(context)
    with serving(SERVERS["hosted"], key=HOSTED_KEY, tls=context) as recorded:
        yield recorded.root


def _config(root: str) -> BackendConfig:
    return BackendConfig(api_base=f"{root}/v1", model="gpt-oss-120b", api_key=HOSTED_KEY)


def test_an_untrusted_certificate_is_refused_in_one_line(
    tls_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with pytest.raises(ServerError) as error:
        open_backend(_config(tls_server))
    message = str(error.value)
    assert "\n" not in message
    assert "CERTIFICATE_VERIFY_FAILED" in message or "certificate" in message.lower()


def test_a_trusted_certificate_is_talked_to(
    tls_server: str, authority: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    with open_backend(_config(tls_server)) as backend:
        text = "".join(piece.text for piece in backend.generate(PROMPT))
    assert CODE in text  # the recorded first answer: a python call


def test_tls_is_set_up_for_https_servers_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The certificate store is loaded for https:// (verification on), not for http://: a
    server reached directly gets lmc's own client (no TLS, no httpx), one behind a proxy
    httpx without verification."""
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    secure = make_client(BackendConfig(api_base="https://example.org/v1"), None)
    assert isinstance(secure, httpx.Client)
    context: ssl.SSLContext | None = secure._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert context is not None and context.verify_mode == ssl.CERT_REQUIRED
    secure.close()
    plain = make_client(BackendConfig(api_base="http://127.0.0.1:8080/v1"), None)
    assert isinstance(plain, Client)
    plain.close()
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    proxied = make_client(BackendConfig(api_base="http://127.0.0.1:8080/v1"), None)
    assert isinstance(proxied, httpx.Client)
    context = proxied._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert context is None or context.verify_mode == ssl.CERT_NONE
    proxied.close()
