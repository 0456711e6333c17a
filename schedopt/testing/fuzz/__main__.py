"""python -m schedopt.testing.fuzz: survey every case (see schedopt.testing.fuzz.main)."""

import sys

from . import main

if __name__ == "__main__":  # a case's own process (multiprocessing's forkserver) imports this module again
    sys.exit(main())
