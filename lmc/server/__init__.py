"""``lmc serve``: LMC over a websocket in Open Interpreter's server protocol, and a chat page.

:func:`create_app` builds the ASGI app (Starlette) from a :class:`ServerConfig`;
:mod:`lmc.server.inbound` reads clients' frames, :mod:`lmc.server.connection` runs one
client's turns, :mod:`lmc.server.turns` lets connections take turns on one in-process model.
Import this package only with the server extras installed (``pip install "lmc-agent[server]"``).
"""

from lmc.server.app import InterpreterFactory, ServerConfig, create_app

__all__ = ["InterpreterFactory", "ServerConfig", "create_app"]
