"""``python -m mcp_input_sync._demo_server``: serve stdin and stdout until EOF."""

from __future__ import annotations

import sys

from .dispatch import main

if __name__ == "__main__":
    sys.exit(main())
