"""Shared plumbing of lmc's wrapper kernels (lmc_shell, lmc_javascript); not a kernel itself.

``session`` drives a child process over private pipes; ``kernel`` turns its events into
Jupyter messages. A kernel script puts ``kernels/`` on ``sys.path`` to import this package.
"""
