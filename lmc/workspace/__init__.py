"""The working directory as the person's files: snapshots in a shadow git repository,
what changed between two of them, restoring one, and the AGENTS.md files that brief the model.

Everything here runs in lmc's own process, outside the sandbox, before and after each block.
"""
