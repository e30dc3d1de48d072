"""Completions for replay files: a python tool call, a final answer."""

from __future__ import annotations


def code(source: str) -> str:
    return f"<|channel|>analysis to=python code<|message|>{source}<|call|>"


def final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"
