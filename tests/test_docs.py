"""The documentation's checks: every public name has a docstring, the main entry points' examples run as doctests,
the version is one number, and (slow) the gallery runs and the site builds with zero warnings.

The site itself (``python -m sphinx -W --keep-going -n -b html docs docs/_build/html``) is what finds a broken
internal link or cross-reference; ``test_the_site_builds_without_a_warning`` runs it where Sphinx is installed
(``pip install -e ".[docs]"``), and ``.ci/run`` runs it on every submission.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

import schedopt

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _apipages() -> ModuleType:
    """``docs/_ext/apipages.py``: the list of public names the API reference documents (no Sphinx needed)."""
    spec = importlib.util.spec_from_file_location("schedopt_docs_apipages", DOCS / "_ext" / "apipages.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is made
    spec.loader.exec_module(mod)
    return mod


apipages = _apipages()


def test_every_public_name_has_a_docstring() -> None:
    """Every name of every public module's ``__all__`` (packages and plain modules, those added later included):
    a function's or class's docstring, or a constant's (a ``#:`` comment above it or a string after it)."""
    names = apipages.public_names()
    assert len(names) > 1000 and {p.package for p in names} >= {"schedopt", "schedopt.sim", "schedopt.sia"}
    missing = sorted({p.fullname for p in names if not apipages.has_doc(p)})
    assert not missing, f"public names without a docstring: {missing}"


def test_the_docstring_check_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package whose ``__all__`` holds an undocumented function and constant beside documented ones."""
    pkg = tmp_path / "fakepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        '"""A package."""\n__all__ = ["A", "B", "C", "f", "g"]\n'
        '#: documented\nA = 1\nB = 2\nC = 3\n"""documented after"""\n'
        'def f():\n    """documented"""\ndef g():\n    pass\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    got = {p.name: apipages.has_doc(p) for p in apipages.public_names("fakepkg")}
    assert got == {"A": True, "B": False, "C": True, "f": True, "g": False}


def test_version_is_the_package_metadata_version() -> None:
    """pyproject.toml takes the version from ``schedopt.__version__`` (one number, bumped with CHANGELOG.md), and
    the installed distribution says the same where it was installed from this tree."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "schedopt.__version__"}
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{schedopt.__version__}]" in changelog, "CHANGELOG.md has no section for this version"
    dist = importlib.metadata.distribution("schedopt")
    location = Path(str(dist.locate_file("schedopt"))).resolve()
    direct = dist.read_text("direct_url.json") or ""
    if location == (ROOT / "schedopt").resolve() or ROOT.as_uri() in direct:
        assert dist.version == schedopt.__version__


#: The main entry points: each has an ``Examples`` section run here as a doctest.
DOCTESTED = [
    "schedopt.solve",
    "schedopt.LinearModel",
    "schedopt.sim.simulate",
    "schedopt.sim.simulate_many",
    "schedopt.sim.policies",
    "schedopt.sim.get_policy",
    "schedopt.problem.problems",
    "schedopt.problem.get_problem",
    "schedopt.traces.read_trace",
    "schedopt.traces.generate_workload",
    "schedopt.sia.generate_instance",
    "schedopt.sia.SiaProblem.build",
    "schedopt.synergy.build",
    "schedopt.heterps.build",
    "schedopt.hived.build_exact_model",
    "schedopt.gandiva.build_packing",
    "schedopt.gavel.build",
    "schedopt.gavel.solve_spec",
    "schedopt.pollux.build",
    "schedopt.pollux.solve_spec",
    "schedopt.shockwave.build",
    "schedopt.shockwave.solve_spec",
    "schedopt.live.Session",
]


def _object(path: str) -> object:
    """What ``path`` names as a user spells it: ``schedopt.solve`` is the function (the package's attribute), not
    the module ``schedopt/solve.py`` it hides."""
    parts = path.split(".")
    obj: object = importlib.import_module(parts[0])
    for i, attr in enumerate(parts[1:], start=1):
        if not hasattr(obj, attr):
            importlib.import_module(".".join(parts[: i + 1]))
        obj = getattr(obj, attr)
    return obj


@pytest.mark.parametrize("path", DOCTESTED)
def test_the_entry_point_examples_run(path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    obj = _object(path)
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(obj, path, globs={}) if t.examples]
    assert tests, f"{path} has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{path}: {result.failed} of {result.attempted} examples failed (see above)"


def test_a_failing_example_fails() -> None:
    t = doctest.DocTestParser().get_doctest(">>> 1 + 1\n3\n", {}, "x", None, 0)
    runner = doctest.DocTestRunner()
    runner.run(t, out=lambda s: None)
    assert runner.summarize(verbose=False).failed == 1


GALLERY = sorted((DOCS / "examples").glob("plot_*.py"))


def test_the_gallery_is_there() -> None:
    assert len(GALLERY) >= 8


@pytest.mark.slow
@pytest.mark.parametrize("script", GALLERY, ids=[p.stem for p in GALLERY])
def test_a_gallery_example_runs(script: Path, tmp_path: Path) -> None:
    """Each example as sphinx-gallery runs it at build time: from a scratch folder, figures to files (Agg)."""
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]


@pytest.mark.slow
def test_the_site_builds_without_a_warning(tmp_path: Path) -> None:
    """The documented build command: warnings are errors, every cross-reference must resolve."""
    pytest.importorskip("sphinx")
    pytest.importorskip("pydata_sphinx_theme")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html", str(DOCS),
           str(tmp_path / "html")]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-5000:]


#: the documented build command (README.md, CONTRIBUTING.md, docs/conf.py)
DOCS_BUILD = "python -m sphinx -W --keep-going -n -b html docs docs/_build/html"


def readme_commands() -> list[str]:
    """Every command of README.md's ``bash`` blocks, one per ``&&`` part, comments dropped, in order."""
    out, inside = [], False
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```bash" if not inside else False
            continue
        if inside and line.strip():
            out.extend(part.strip() for part in line.split(" #", 1)[0].split("&&") if part.strip())
    return out


def test_the_readme_is_one_screen_and_starts_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) < 150
    cmds = readme_commands()
    assert cmds[:4] == ["pip install -e .", "schedopt demo", 'pip install -e ".[test]"', "python -m pytest -n 2"]
    assert DOCS_BUILD in cmds


def test_every_readme_command_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``schedopt ...`` commands run in order in one folder (in this process, through ``schedopt.cli.main``) and
    exit 0 (``explain`` of the infeasible example: 1, as the exit-code rule says); ``pip install`` names only extras pyproject.toml declares; ``python -m pytest -n 2`` is this run and the
    docs build is the slow test below (and a step of .ci/run)."""
    from schedopt.cli import main

    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    monkeypatch.chdir(tmp_path)
    ran = []
    for cmd in readme_commands():
        words = cmd.split()
        if words[:3] == ["pip", "install", "-e"]:
            spec = words[3].strip("\"'")
            assert spec == "." or (spec.startswith(".[") and set(spec[2:-1].split(",")) <= extras), cmd
        elif cmd in ("python -m pytest -n 2", DOCS_BUILD):
            continue
        else:
            assert words[0] == "schedopt", f"README command {cmd!r} is not tested: test it here"
            code = main(words[1:])
            expected = 1 if words[1] == "explain" else 0  # explain of an infeasible instance: exit 1, by the rule
            assert code == expected, f"{cmd!r} exited {code}: {capsys.readouterr().err[-2000:]}"
            ran.append(words[1])
    assert ran[0] == "demo" and {"generate", "solve", "explain", "simulate"} <= set(ran)


def test_the_documented_build_command_is_the_one_this_file_runs() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text() + (DOCS / "conf.py").read_text()
    assert text.count(DOCS_BUILD) >= 2
