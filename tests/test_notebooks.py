"""The notebooks in ``notebooks/``: each runs top to bottom in a fresh kernel without a cell error (the last cell of
each asserts the notebook's key claims), the files in the repository carry no outputs, and they equal what
``tools/build_notebooks.py`` generates from its cell lists."""

from __future__ import annotations

import importlib.util
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
TIMEOUT = 120  # seconds per cell, and per notebook (see run_notebook)


def _load_builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_notebooks", ROOT / "tools" / "build_notebooks.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


builder = _load_builder()
NAMES = sorted(builder.NOTEBOOKS)
SLOWEST = ("02_comparing_solvers.ipynb",)  # started first


def run_notebook(nb: nbformat.NotebookNode, cwd: Path) -> float:
    """Execute ``nb`` in place in a fresh python3 kernel; raises CellExecutionError on any cell error. Seconds."""
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    seconds = time.perf_counter() - t0
    assert seconds < TIMEOUT, f"took {seconds:.1f} s"
    return seconds


@pytest.fixture
def agg(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel inherits the environment: a non-interactive matplotlib backend."""
    monkeypatch.setenv("MPLBACKEND", "Agg")


@pytest.fixture(scope="session")
def executed(request: pytest.FixtureRequest) -> dict[str, tuple[nbformat.NotebookNode, float, BaseException | None]]:
    """Run the selected notebooks, two at a time (one kernel each; the machine has 2 cores), longest first."""
    wanted = sorted({it.callspec.params["name"] for it in request.session.items
                     if getattr(it, "originalname", "") == "test_notebook_runs"},
                    key=lambda n: (n not in SLOWEST, n))

    def one(name: str) -> tuple[nbformat.NotebookNode, float, BaseException | None]:
        nb = nbformat.read(NB_DIR / name, as_version=4)
        t0 = time.perf_counter()
        try:
            return nb, run_notebook(nb, NB_DIR), None
        except Exception as exc:  # reported by the notebook's own test
            return nb, time.perf_counter() - t0, exc

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MPLBACKEND", "Agg")
        with ThreadPoolExecutor(max_workers=2) as pool:
            return dict(zip(wanted, pool.map(one, wanted)))


def test_builder_lists_exactly_the_notebooks_in_the_repo() -> None:
    assert sorted(p.name for p in NB_DIR.glob("*.ipynb")) == NAMES
    assert len(NAMES) == 6


@pytest.mark.parametrize("name", NAMES)
def test_notebook_in_repo_is_stripped_and_generated(name: str) -> None:
    text = (NB_DIR / name).read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, name
    for c in code:
        assert c.outputs == [] and c.execution_count is None, f"{name}: cell {c.id} has outputs"
    # the key claims are asserted in the final cell, so a broken notebook fails the run
    assert "assert " in code[-1].source and "all claims hold" in code[-1].source
    assert text == builder.render(name), f"{name} differs from tools/build_notebooks.py: run it and commit the output"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name: str, executed: dict, capsys: pytest.CaptureFixture[str]) -> None:
    nb, seconds, error = executed[name]
    with capsys.disabled():
        print(f"\n{name}: {seconds:.1f} s (run 2 at a time)", end="")
    if error is not None:
        raise error
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    text = "".join(o.get("text", "") for o in last.outputs if o.output_type == "stream")
    assert "all claims hold" in text, f"{name}: the final cell did not finish: {last.outputs}"
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []


def test_a_failing_claim_fails_the_run(agg: None) -> None:
    """The runner used above does fail on a cell error (here: a false claim in the final cell)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1 + 1"), nbformat.v4.new_code_cell("assert x == 3, 'claim broken'")]
    with pytest.raises(CellExecutionError, match="claim broken"):
        run_notebook(nb, NB_DIR)


def test_builder_check_mode_detects_a_stale_notebook(tmp_path: Path) -> None:
    for name in NAMES:
        (tmp_path / name).write_text(builder.render(name), encoding="utf-8")
    assert builder.stale(tmp_path) == []
    assert builder.main(["--check", "--out", str(tmp_path)]) == 0
    nb = nbformat.read(tmp_path / NAMES[0], as_version=4)
    nb.cells[-1].source += "\nprint('edited by hand')"
    nbformat.write(nb, tmp_path / NAMES[0])
    assert builder.stale(tmp_path) == [NAMES[0]]
    assert builder.main(["--check", "--out", str(tmp_path)]) == 1
