"""The command line: a consumer of the chunk stream, nothing more."""
