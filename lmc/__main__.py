"""``python -m lmc``: the same as the ``lmc`` command."""

from lmc.cli.app import main

if __name__ == "__main__":
    main()
