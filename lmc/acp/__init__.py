"""``lmc acp``: lmc as an Agent Client Protocol agent, for editors (Zed, JetBrains, Neovim,
Emacs, JupyterLab).

One more consumer of the chunk stream, beside the terminal, ``--json`` and ``lmc serve``:
:mod:`lmc.acp.updates` maps chunks to ``session/update`` notifications, :mod:`lmc.acp.session`
asks the editor before a block runs, :mod:`lmc.acp.agent` answers the JSON-RPC lines.
"""

from lmc.acp.agent import PROTOCOL_VERSION, Agent
from lmc.acp.model import SharedModel
from lmc.acp.sessions import Sessions
from lmc.acp.stdio import take_stdio
from lmc.acp.wire import Wire

__all__ = ["PROTOCOL_VERSION", "Agent", "Sessions", "SharedModel", "Wire", "take_stdio"]
