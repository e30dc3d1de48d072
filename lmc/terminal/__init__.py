"""The terminal side of lmc: renderers of the LMC chunk stream, input, confirmation, %commands.

Nothing here talks to a model or a kernel: a renderer is fed chunks and draws them.
Modules import rich and prompt_toolkit, so only import them once a command needs them.
"""
