"""The frozen program's entry point: the same as ``python -m mnemoscope``."""

import sys

from mnemoscope.cli import main

if __name__ == "__main__":
    sys.exit(main())
