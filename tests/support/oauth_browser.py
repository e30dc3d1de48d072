"""A stand-in for the person's browser in the OAuth tests (``BROWSER="python this.py %s"``):
it opens the authorization URL and follows the redirects, back to lmc's loopback listener."""

from __future__ import annotations

import sys

import httpx

if __name__ == "__main__":
    httpx.get(sys.argv[1], follow_redirects=True, timeout=60)
