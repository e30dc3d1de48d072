"""Every message ``lmc acp`` writes, checked against ACP v1's JSON Schema.

The schema is the one the official Python SDK (``agent-client-protocol`` on PyPI) ships as
its pydantic models, generated from the protocol's schema.json (``acp/schema.py``: "Generated
from schema/schema.json", schema-v1.19.0 in 0.12.1); each model gives its JSON Schema and
:mod:`jsonschema` checks the message against it strictly (the SDK's own parsing salvages
bad fields rather than failing, so it would not notice).
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema
from acp import schema

__all__ = ["AGENT_RESULTS", "SchemaCheck", "check"]

#: The response model of each request lmc answers.
AGENT_RESULTS: dict[str, type[schema.BaseModel]] = {
    "initialize": schema.InitializeResponse,
    "session/new": schema.NewSessionResponse,
    "session/load": schema.LoadSessionResponse,
    "session/prompt": schema.PromptResponse,
}
#: lmc's own requests and notifications.
AGENT_SENDS: dict[str, type[schema.BaseModel]] = {
    "session/update": schema.SessionNotification,
    "session/request_permission": schema.RequestPermissionRequest,
}


@functools.cache
def _validator(model: type[schema.BaseModel]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(model.model_json_schema(by_alias=True))


def check(model: type[schema.BaseModel], value: Any) -> None:
    """Raise AssertionError naming every way ``value`` breaks ``model``'s schema."""
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in _validator(model).iter_errors(value)]
    assert not errors, f"{model.__name__}: {errors} in {value!r}"


class SchemaCheck:
    """Checks each message from the agent; knows which method each response answers."""

    def __init__(self) -> None:
        self.methods: dict[Any, str] = {}  # the client's request ids -> methods
        self.checked = 0

    def client_sent(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            self.methods[message["id"]] = message["method"]

    def agent_sent(self, message: dict[str, Any]) -> None:
        assert message.get("jsonrpc") == "2.0", message
        method = message.get("method")
        if method is not None:
            assert method in AGENT_SENDS, f"lmc sent an unknown method: {message}"
            assert ("id" in message) == (method == "session/request_permission"), message
            check(AGENT_SENDS[method], message["params"])
        elif "error" in message:
            error = message["error"]
            assert isinstance(error.get("code"), int) and isinstance(error.get("message"), str)
            check(schema.Error, error)
        else:
            answered = self.methods.get(message.get("id"))
            assert answered in AGENT_RESULTS, f"a response to no request of ours: {message}"
            check(AGENT_RESULTS[answered], message["result"])
        self.checked += 1
