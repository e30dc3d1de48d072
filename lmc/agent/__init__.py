"""The agent: the loop from a person's words to a final answer, and its Python API."""

from lmc.agent.interpreter import Interpreter

__all__ = ["Interpreter"]
