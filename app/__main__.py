import sys

from mnemoscope.cli import main

sys.exit(main())
