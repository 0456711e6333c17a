"""A state path in a folder that does not exist is named as such, before anything is made or solved: the live
session (``Session(state_path=)``) and ``schedopt serve --state`` (which used to make the token file first and fail
naming it). Also: the install hints printed for missing optional packages are commands that work from a checkout
(schedopt is not on PyPI, so ``pip install 'schedopt[x]'`` fetches nothing)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from schedopt.backends.glpk import GlpkBackend
from schedopt.errors import InputError
from schedopt.live import ClusterState, NodeState, Session

ROOT = Path(__file__).resolve().parents[1]


def _cluster() -> ClusterState:
    return ClusterState((NodeState("a1", "a100", 8), NodeState("t1", "t4", 4)))


def test_session_state_path_in_a_missing_folder(tmp_path: Path) -> None:
    missing = tmp_path / "nodir" / "state.json"
    with pytest.raises(InputError) as ei:
        Session(_cluster(), "tiresias", state_path=str(missing))
    assert ei.value.field == "state_path" and ei.value.value == str(missing)
    assert "does not exist" in str(ei.value) and str(missing.parent) in str(ei.value)
    assert not missing.parent.exists()


def test_session_state_path_accepts_a_path_object_and_saves_there(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    s = Session(_cluster(), "tiresias", state_path=path)
    assert s.state_path == str(path)
    s.decide(0.0)
    doc = json.loads(path.read_text())
    assert doc["schema"] == "schedopt.live.session"
    with pytest.raises(InputError) as ei:
        Session(_cluster(), "tiresias", state_path=3)  # type: ignore[arg-type]
    assert ei.value.field == "state_path" and ei.value.value == 3


def test_serve_state_in_a_missing_folder_names_the_state(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    init = tmp_path / "init.json"
    init.write_text(json.dumps({"schema": "schedopt.serve.init", "version": 1, "cluster": _cluster().to_dict(),
                                "policy": "tiresias", "round_duration": 60.0}))
    state = tmp_path / "nodir" / "state.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run([sys.executable, "-m", "schedopt", "serve", "--state", "nodir/state.json", "--init", str(init),
                        "--port", "0"], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "state='nodir/state.json'" in p.stderr and "nodir' does not exist" in p.stderr, p.stderr
    assert "token" not in p.stderr and "Traceback" not in p.stderr
    assert not state.parent.exists()


def test_glpk_install_hint_is_a_command_that_works_from_a_checkout() -> None:
    hint = GlpkBackend.install_hint
    assert "pip install swiglpk" in hint and "-e '.[glpk]'" in hint
    assert "schedopt[" not in hint
    ok, why = GlpkBackend().available()
    assert ok == (importlib.util.find_spec("swiglpk") is not None)
    assert ok or ("'swiglpk' is not installed" in why and "pip install swiglpk" in why)
