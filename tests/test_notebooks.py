"""The notebooks in ``notebooks/``.

Each ``NN_name.py`` (jupytext percent format, linted by ruff) is the reviewed source of ``NN_name.ipynb``; after
editing one, regenerate its pair with ``jupytext --sync notebooks/*.py`` (the pairing is configured in
``[tool.jupytext]`` of pyproject.toml). Here: every pair holds the same cells, the ``.ipynb`` carry no outputs, and
each notebook runs top to bottom in a fresh kernel through nbmake's runner (the one ``pytest --nbmake notebooks``
uses) without a cell error; the last cell of each asserts the notebook's key claims.
"""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbmake.nb_result import NotebookResult
from nbmake.nb_run import NotebookRun

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
TIMEOUT = 120  # seconds per cell (nbmake's timeout), and per notebook (checked below)
NAMES = sorted(p.stem for p in NB_DIR.glob("*.py"))
SLOWEST = ("02_comparing_solvers",)  # started first


def cells(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source) for c in nb.cells]


def differences(py: Path, ipynb: Path) -> list[str]:
    """How ``ipynb`` differs from what jupytext makes of its source ``py`` (empty when the pair is in sync)."""
    if not ipynb.exists():
        return [f"{ipynb.name} is missing"]
    src, nb = jupytext.read(py), nbformat.read(ipynb, as_version=4)
    out = []
    if cells(src) != cells(nb):
        bad = next(k for k, (a, b) in enumerate(zip([*cells(src), None], [*cells(nb), None])) if a != b)
        out.append(f"cell {bad} differs (source has {len(src.cells)} cells, notebook {len(nb.cells)})")
    if src.metadata.get("kernelspec") != nb.metadata.get("kernelspec"):
        out.append("kernelspec differs")
    return out


def run(ipynb: Path) -> tuple[NotebookResult, float]:
    t0 = time.perf_counter()
    result = NotebookRun(ipynb, TIMEOUT).execute()
    return result, time.perf_counter() - t0


@pytest.fixture(scope="session")
def executed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> dict[str, tuple[NotebookResult, float]]:
    """Run the selected notebooks, two at a time (one kernel each; the machine has 2 cores), longest first.

    Each runs from a copy in a temporary directory, so nothing it writes (hypothesis's cache, figures) lands in the
    repository; the kernel inherits the environment, with a non-interactive matplotlib backend."""
    wanted = sorted({it.callspec.params["name"] for it in request.session.items
                     if getattr(it, "originalname", "") == "test_notebook_runs"},
                    key=lambda n: (n not in SLOWEST, n))
    where = tmp_path_factory.mktemp("notebooks")
    copies = [Path(shutil.copy(NB_DIR / f"{n}.ipynb", where)) for n in wanted]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MPLBACKEND", "Agg")
        with ThreadPoolExecutor(max_workers=2) as pool:
            return dict(zip(wanted, pool.map(run, copies)))


def test_every_notebook_is_a_pair_of_py_source_and_ipynb() -> None:
    assert sorted(p.stem for p in NB_DIR.glob("*.ipynb")) == NAMES
    assert len(NAMES) == 8


@pytest.mark.parametrize("name", NAMES)
def test_notebook_matches_its_source_and_has_no_outputs(name: str) -> None:
    nb = nbformat.read(NB_DIR / f"{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, name
    for c in code:
        assert c.outputs == [] and c.execution_count is None, f"{name}: cell {c.id} has outputs"
    # the key claims are asserted in the final cell, so a broken notebook fails the run
    assert "assert " in code[-1].source and "all claims hold" in code[-1].source
    assert differences(NB_DIR / f"{name}.py", NB_DIR / f"{name}.ipynb") == [], (
        f"{name}.ipynb differs from {name}.py: run `jupytext --sync notebooks/{name}.py` and commit both")


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name: str, executed: dict[str, tuple[NotebookResult, float]],
                       capsys: pytest.CaptureFixture[str]) -> None:
    result, seconds = executed[name]
    with capsys.disabled():
        print(f"\n{name}: {seconds:.1f} s (run 2 at a time)", end="")
    assert result.error is None, result.error.trace
    assert seconds < TIMEOUT, f"took {seconds:.1f} s"
    last = [c for c in result.nb.cells if c.cell_type == "code"][-1]
    text = "".join(o.get("text", "") for o in last.outputs if o.output_type == "stream")
    assert "all claims hold" in text, f"{name}: the final cell did not finish: {last.outputs}"


SMALL = """\
# %% [markdown]
# A two-cell notebook

# %%
x = 1 + 1

# %%
assert x == 3, "claim broken"
print("all claims hold")
"""


def test_a_failing_claim_fails_the_run(tmp_path: Path) -> None:
    """The runner used above does report a cell error (here: a false claim in the final cell)."""
    (tmp_path / "small.py").write_text(SMALL)
    jupytext.write(jupytext.read(tmp_path / "small.py"), tmp_path / "small.ipynb")
    result, _ = run(tmp_path / "small.ipynb")
    assert result.error is not None and "claim broken" in result.error.summary
    assert result.error.failing_cell_index == 2


def test_the_pair_check_detects_a_stale_notebook(tmp_path: Path) -> None:
    py, ipynb = tmp_path / "small.py", tmp_path / "small.ipynb"
    py.write_text(SMALL)
    assert differences(py, ipynb) == ["small.ipynb is missing"]
    jupytext.write(jupytext.read(py), ipynb)
    assert differences(py, ipynb) == []
    py.write_text(SMALL.replace("1 + 1", "1 + 2"))  # the source edited, the notebook not regenerated
    assert differences(py, ipynb) == ["cell 1 differs (source has 3 cells, notebook 3)"]
    py.write_text(SMALL + "\n# %%\nprint(x)\n")
    assert differences(py, ipynb) == ["cell 3 differs (source has 4 cells, notebook 3)"]
