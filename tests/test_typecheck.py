"""The package type-checks clean: ``python -m mypy schedopt`` with the configuration in pyproject.toml (strict on the
core and the contract, mypy's defaults elsewhere) reports zero errors.

Run in a subprocess so the CI command (``pip install -e ".[test]" && python -m pytest``) checks it. mypy's cache goes
to a per-session temporary folder: the check is always a cold one (about 20 s on 2 cores), never trusting a cache
left behind by another checkout.
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


def test_mypy_reports_zero_errors(tmp_path_factory: pytest.TempPathFactory) -> None:
    cache = tmp_path_factory.mktemp("mypy_cache")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "schedopt"],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )
    out = proc.stdout + proc.stderr
    errors = [line for line in out.splitlines() if re.search(r": error: ", line)]
    assert proc.returncode == 0 and not errors, f"mypy found {len(errors)} error(s):\n{out[-6000:]}"
    assert "Success: no issues found" in out
