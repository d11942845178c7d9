"""The frozen program's entry point: the same as ``python -m app``."""

import sys

from app.cli import main

if __name__ == "__main__":
    sys.exit(main())
