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


def _temporary_modules() -> list[str]:
    """The module patterns of the TEMPORARY block of pyproject.toml."""
    text = (ROOT / "pyproject.toml").read_text()
    block = text.split("# >>> TEMPORARY", 1)[1].split("# >>> end TEMPORARY", 1)[0] if "# >>> TEMPORARY" in text else ""
    return re.findall(r'"(schedopt[\w.*]*)"', block)


def test_the_readme_counts_the_type_ignores_outside_the_temporary_block() -> None:
    """CONTRIBUTING.md's count of `type: ignore` comments is the real one (the strict core has none)."""
    temporary = [m.removesuffix(".*").replace(".", "/") for m in _temporary_modules()]
    core = ("model.py", "results.py", "problem.py", "params.py", "interrupt.py", "solve.py", "errors.py", "structure.py",
            "backends/")
    counts = {"core": 0, "elsewhere": 0}
    for p in (ROOT / "schedopt").rglob("*.py"):
        rel = p.relative_to(ROOT).as_posix()
        if any(rel == f"{t}.py" or rel.startswith(f"{t}/") for t in temporary):
            continue
        n = sum("type: ignore" in line for line in p.read_text().splitlines())
        counts["core" if rel.removeprefix("schedopt/").startswith(core) else "elsewhere"] += n
    readme = (ROOT / "CONTRIBUTING.md").read_text()
    said = re.search(r"`type: ignore`: (\d+) in the strict core; (\d+) elsewhere outside the TEMPORARY block", readme)
    assert said, "CONTRIBUTING.md's type-check section no longer states the count"
    assert (int(said.group(1)), int(said.group(2))) == (counts["core"], counts["elsewhere"]), counts
