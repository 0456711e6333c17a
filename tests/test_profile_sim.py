"""tools/profile_sim.py (issue 26): the phases of every round add up to the round, one record per simulated round,
and the package is left as it was."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("profile_sim", ROOT / "tools" / "profile_sim.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.filterwarnings("ignore")  # the engine warns that a time-capped run leaves jobs unfinished
def test_profile_of_a_short_sia_run_adds_up_and_unwraps() -> None:
    """sia on saturn/1 for 1,200 s of simulated time: one record per round the engine ran (it skips idle ones); in
    each the phases' wall and
    CPU times sum to the round's (engine (other) is the remainder, never negative beyond timer noise); the estimator,
    model build and solve phases ran in every round; afterwards the engine's functions are the originals again."""
    import schedopt.sim.engine as eng

    tool = _tool()
    before = (eng.job_view, eng.goodput_estimate, eng._from_allocation)
    rec, res, wall, _cpu = tool.run("sia", "saturn/1", "sia-64", {}, "bootstrap", "sia", 1200.0)
    assert len(rec.rounds) == len(res.rounds) >= 8
    for row in rec.rounds:
        parts = {k: v for k, v in row.items() if k != "round"}
        assert sum(v[0] for v in parts.values()) == pytest.approx(row["round"][0], abs=1e-9)
        assert sum(v[1] for v in parts.values()) == pytest.approx(row["round"][1], abs=1e-9)
        assert parts["engine (other)"][0] > -1e-3
        assert all(parts[k][0] > 0 for k in ("estimator", "model build", "solve", "view"))
    assert sum(r["round"][0] for r in rec.rounds) == pytest.approx(wall, rel=0.05)
    assert (eng.job_view, eng.goodput_estimate, eng._from_allocation) == before
    rows = tool.summarize(rec)
    assert [r["phase"] for r in rows][-1] == "round" and rows[-1]["wall_s"] > 0
