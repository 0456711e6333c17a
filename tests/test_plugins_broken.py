"""Issue 41: a broken plug-in entry point is an error naming the plug-in (exit 2 on the command line), not a
ModuleNotFoundError from the first simulate_many or solve. A fake installed distribution on the path declares a
family, a problem and a policy whose module is missing; a fresh process that sees it tries each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, sys
from schedopt.cli import main
out = {}
def attempt(key, fn):
    try:
        fn()
        out[key] = "no error"
    except Exception as exc:
        out[key] = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
from schedopt.sim import simulate_many
from schedopt.problem import get_problem
attempt("family", lambda: simulate_many(["fifo"], ["saturn/1"], workers=1, progress=False))
attempt("problem", lambda: get_problem("sia"))
out["cli"] = main(["simulate", "--policy", "fifo"])
import schedopt.sim.families as fam
fam._SYSTEM_EPS_LOADED = True  # past the broken family, to reach the broken policy
attempt("policy", lambda: simulate_many(["brokenpol"], ["saturn/1"], workers=1, progress=False))
print(json.dumps(out))
"""


def test_a_broken_plugin_is_named(tmp_path: Path) -> None:
    d = tmp_path / "brokenplug-0.1.dist-info"
    d.mkdir()
    (d / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenplug\nVersion: 0.1\n")
    (d / "entry_points.txt").write_text("[schedopt.sim_systems]\nbrokenfam = nosuch_module_41:Thing\n"
                                        "[schedopt.problems]\nbrokenprob = nosuch_module_41:IO\n"
                                        "[schedopt.policies]\nbrokenpol = nosuch_module_41:Policy\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    for key, where in (("family", "schedopt.sim_systems:brokenfam"), ("problem", "schedopt.problems:brokenprob"),
                       ("policy", "schedopt.policies:brokenpol")):
        assert got[key].startswith("schedopt.plugins.PluginError") and where in got[key], got
        assert "'brokenplug'" in got[key] and "nosuch_module_41" in got[key]
    assert got["cli"] == 2
    assert "plug-in" in r.stderr and "brokenfam" in r.stderr and "Traceback" not in r.stderr
