"""Kernels on a Jupyter Kernel Gateway or Enterprise Gateway: where to find one, and its REST API.

Both gateways speak the same small protocol: ``GET /api/kernelspecs``, ``POST /api/kernels``
(start; ``{"name": SPEC, "env": {...}}``), ``POST /api/kernels/{id}/interrupt``, ``DELETE
/api/kernels/{id}``, and a websocket per kernel at ``/api/kernels/{id}/channels`` carrying the
Jupyter messages as JSON (:mod:`lmc.computer.gateway_kernel` drives that one). A token goes in
``Authorization: token ...``. The gateway starts stock kernels by kernelspec name, so lmc maps
each language it runs to one of the gateway's names (python to ``python3`` by default).

Environment in the start request: both gateways pass on the ``KERNEL_*`` variables (and those
their operator allows); ``KERNEL_USERNAME`` is who the kernel runs for (Enterprise Gateway
starts it as that user where impersonation is on).

This is the one place that maps httpx's errors and the gateway's HTTP answers to
:class:`~lmc.errors.ComputerError`, each naming the URL or the token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from lmc.errors import ComputerError

if TYPE_CHECKING:
    from lmc.settings import Settings

__all__ = [
    "DEFAULT_KERNELS",
    "GatewayClient",
    "GatewayConfig",
    "check_gateway",
    "gateway_config",
    "require_websockets",
]

#: Languages lmc runs -> the gateway's kernelspec names, unless the config says otherwise.
DEFAULT_KERNELS: Final = MappingProxyType({"python": "python3"})
#: Seconds to connect to the gateway.
CONNECT_TIMEOUT: Final = 10.0
#: Seconds a kernel may take to start on the gateway (Enterprise Gateway may schedule a pod).
START_TIMEOUT: Final = 120.0
#: Seconds for the small requests (interrupt, delete, list).
REQUEST_TIMEOUT: Final = 10.0


def _default_username() -> str:
    import getpass  # only with a gateway: not on every start (termios with it)

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return "lmc"


@dataclass(frozen=True)
class GatewayConfig:
    """Where the gateway is and how lmc's kernels are started on it.

    ``kernels`` maps a language (python, shell, ...) to the gateway's kernelspec name;
    ``env`` is sent with every start request; ``username`` goes as ``KERNEL_USERNAME``.
    """

    url: str
    token: str | None = None
    kernels: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_KERNELS))
    env: Mapping[str, str] = field(default_factory=dict)
    username: str = field(default_factory=_default_username)
    start_timeout: float = START_TIMEOUT

    def __post_init__(self) -> None:
        url = self.url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ComputerError(
                f"the kernel gateway URL {self.url!r} must start with http:// or https://"
            )
        object.__setattr__(self, "url", url)
        object.__setattr__(self, "token", self.token or None)

    @property
    def websocket_url(self) -> str:
        return "ws" + self.url[len("http") :]

    @property
    def headers(self) -> dict[str, str]:
        return {} if self.token is None else {"Authorization": f"token {self.token}"}

    def kernel_name(self, language: str) -> str:
        """The gateway's kernelspec for ``language``; ComputerError when none is mapped."""
        name = self.kernels.get(language)
        if not name:
            raise ComputerError(
                f"no kernel on the kernel gateway at {self.url} is mapped to {language} "
                f"(mapped: {', '.join(sorted(self.kernels)) or 'none'}); map one under "
                "[kernel_gateway.kernels] in the config"
            )
        return name

    def start_env(self) -> dict[str, str]:
        """The environment sent with a start request."""
        from lmc.computer.kernel_process import KERNEL_ENV

        return {**KERNEL_ENV, "KERNEL_USERNAME": self.username, **self.env}


def gateway_config(settings: Settings) -> GatewayConfig | None:
    """The gateway ``settings`` name (``kernel_gateway`` and its companions), or None to run
    kernels on this machine."""
    if not settings.kernel_gateway:
        return None
    extra: dict[str, Any] = {}
    if settings.kernel_gateway_username:
        extra["username"] = settings.kernel_gateway_username
    return GatewayConfig(
        settings.kernel_gateway,
        token=settings.kernel_gateway_token,
        kernels={**DEFAULT_KERNELS, **settings.kernel_gateway_kernels},
        env=dict(settings.kernel_gateway_env),
        **extra,
    )


class GatewayClient:
    """The gateway's REST API, errors mapped to one-line :class:`ComputerError`\\ s."""

    def __init__(self, config: GatewayConfig) -> None:
        import httpx

        self.config = config
        self._http = httpx.Client(
            base_url=config.url,
            headers=config.headers,
            timeout=httpx.Timeout(REQUEST_TIMEOUT, connect=CONNECT_TIMEOUT),
        )

    def close(self) -> None:
        self._http.close()

    def kernelspecs(self) -> dict[str, str]:
        """The gateway's kernelspec names -> their languages."""
        answer = self._json("GET", "/api/kernelspecs")
        specs = answer.get("kernelspecs") if isinstance(answer, dict) else None
        if not isinstance(specs, dict):
            raise self._not_a_gateway("/api/kernelspecs", "no kernelspecs in its answer")
        served = {}
        for name, entry in specs.items():
            spec = entry.get("spec") if isinstance(entry, dict) else None
            language = spec.get("language") if isinstance(spec, dict) else None
            served[str(name)] = str(language or "")
        return served

    def kernels(self) -> list[dict[str, Any]]:
        """The kernels running on the gateway (Kernel Gateway answers only with
        ``list_kernels`` on)."""
        answer = self._json("GET", "/api/kernels")
        return [k for k in answer if isinstance(k, dict)] if isinstance(answer, list) else []

    def start_kernel(self, name: str) -> str:
        """Start a kernel from spec ``name``; its id."""
        body = {"name": name, "env": self.config.start_env()}
        answer = self._json("POST", "/api/kernels", json=body, timeout=self.config.start_timeout)
        kernel_id = answer.get("id") if isinstance(answer, dict) else None
        if not isinstance(kernel_id, str) or not kernel_id:
            raise self._not_a_gateway("/api/kernels", "no kernel id in its answer")
        return kernel_id

    def kernel(self, kernel_id: str) -> dict[str, Any] | None:
        """The gateway's model of one kernel (``execution_state`` ...); None once gone."""
        answer = self._json("GET", f"/api/kernels/{kernel_id}", missing_ok=True)
        return answer if isinstance(answer, dict) else None

    def interrupt(self, kernel_id: str) -> None:
        self._json("POST", f"/api/kernels/{kernel_id}/interrupt")

    def delete(self, kernel_id: str, *, timeout: float = REQUEST_TIMEOUT) -> None:
        """Shut the kernel down; one that is already gone is fine."""
        self._json("DELETE", f"/api/kernels/{kernel_id}", timeout=timeout, missing_ok=True)

    def _json(
        self,
        method: str,
        path: str,
        *,
        json: object = None,
        timeout: float | None = None,
        missing_ok: bool = False,
    ) -> Any:
        import httpx

        url = self.config.url
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        try:
            response = self._http.request(method, path, json=json, **extra)
        except httpx.TimeoutException as exc:
            raise ComputerError(
                f"the kernel gateway at {url} did not answer {method} {path} in time"
            ) from exc
        except httpx.HTTPError as exc:
            raise ComputerError(f"cannot reach the kernel gateway at {url}: {exc}") from exc
        status = response.status_code
        reason = _reason(response) if status >= 400 else ""
        if status == 401 or (status == 403 and not reason):
            raise ComputerError(self._refused(status))
        if missing_ok and status == 404:
            return None
        if status >= 400:
            raise ComputerError(
                f"the kernel gateway at {url} answered {method} {path} with HTTP {status}{reason}"
            )
        if status == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise self._not_a_gateway(path, "its answer is not JSON") from exc

    def _refused(self, status: int) -> str:
        url = self.config.url
        if self.config.token is None:
            return (
                f"the kernel gateway at {url} wants a token (HTTP {status}): pass "
                "--kernel-gateway-token or set LMC_KERNEL_GATEWAY_TOKEN"
            )
        return (
            f"the kernel gateway at {url} refused the token (HTTP {status}): check "
            "--kernel-gateway-token / LMC_KERNEL_GATEWAY_TOKEN"
        )

    def _not_a_gateway(self, path: str, why: str) -> ComputerError:
        return ComputerError(
            f"{self.config.url} does not look like a Jupyter kernel gateway ({path}: {why})"
        )


def _reason(response: Any) -> str:
    """The gateway's own one-line reason for an error answer, when it gives one."""
    try:
        body = response.json()
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    message = body.get("message") or body.get("reason")
    return f": {str(message).splitlines()[0][:200]}" if message else ""


def require_websockets() -> None:
    """The websocket client is an extra: say how to get it, in one line."""
    import importlib.util

    if importlib.util.find_spec("websockets") is None:
        from lmc.extras import install_hint

        raise ComputerError(
            f"kernels on a kernel gateway need the gateway extra: {install_hint('gateway')}"
        )


def check_gateway(
    config: GatewayConfig, languages: tuple[str, ...] = ("python",)
) -> dict[str, str]:
    """Raise :class:`ComputerError` unless the gateway answers, takes the token and serves
    the kernelspecs ``languages`` are mapped to; return its kernelspecs (name -> language)."""
    require_websockets()
    client = GatewayClient(config)
    try:
        served = client.kernelspecs()
    finally:
        client.close()
    for language in languages:
        name = config.kernel_name(language)
        if name not in served:
            raise ComputerError(
                f"the kernel gateway at {config.url} has no kernelspec {name!r} for "
                f"{language} (it has: {', '.join(sorted(served)) or 'none'})"
            )
    return served
