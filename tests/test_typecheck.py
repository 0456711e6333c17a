"""The package type-checks clean: ``python -m mypy schedopt`` with the configuration in pyproject.toml (strict on the
core and the contract, mypy's defaults elsewhere) reports zero errors.

Run in a subprocess so the CI command (``pip install -e ".[test]" && python -m pytest``) checks it. mypy keeps its
incremental cache in the repository's ``.mypy_cache/`` (git-ignored): a clean checkout (CI) pays the cold run, 15 s
on the shared 2-core machine, and a rerun after a small change about 2 s.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")


def test_mypy_reports_zero_errors() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "schedopt"],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )
    out = proc.stdout + proc.stderr
    errors = [line for line in out.splitlines() if re.search(r": error: ", line)]
    assert proc.returncode == 0 and not errors, f"mypy found {len(errors)} error(s):\n{out[-6000:]}"
    assert "Success: no issues found" in out
