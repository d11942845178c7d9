"""The frozen program's entry point: the same as ``python -m mnemoscope``."""

import multiprocessing
import sys

from mnemoscope.cli import main

if __name__ == "__main__":
    # A bulk embedding's worker process (store/meaning/embedding_workers.py) is this program started
    # again by multiprocessing: here it runs the worker and exits.
    multiprocessing.freeze_support()
    sys.exit(main())
