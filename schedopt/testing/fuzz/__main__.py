"""python -m schedopt.testing.fuzz: survey every case (see schedopt.testing.fuzz.main)."""

import sys

from . import main

sys.exit(main())
