"""Harmony, OpenAI's chat format for gpt-oss: rendering and streaming parsing, sans-IO.

No model, no I/O, no threads here: text in, text or events out.
"""
