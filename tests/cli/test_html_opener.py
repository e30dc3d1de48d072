"""HTML the code wrote opens in the person's browser only when the code could reach the
network anyway: with the sandbox's network off the browser (which has the network) would
carry out what the document names (an ``<img src="http://...?secret">``, a meta refresh)."""

from __future__ import annotations

import io

import pytest

from lmc.cli import session
from lmc.config import Settings


@pytest.fixture
def at_a_desktop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A person at a terminal with a browser, as far as the opener can tell."""
    import lmc.agent.display

    monkeypatch.setattr(lmc.agent.display, "is_terminal", lambda stream: True)
    monkeypatch.setenv("BROWSER", "true")


@pytest.mark.usefixtures("at_a_desktop")
@pytest.mark.parametrize(
    ("sandbox", "network", "opens"),
    [(None, False, False), ("workspace", False, False), ("workspace", True, True),
     ("off", False, True)],
)  # fmt: skip
def test_html_opens_only_where_the_code_has_the_network(
    sandbox: str | None, network: bool, opens: bool
) -> None:
    settings = Settings(sandbox=sandbox, network=network)
    opener = session.html_opener(io.StringIO(), settings)
    assert (opener is session.open_in_browser) is opens
