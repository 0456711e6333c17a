"""The simulator tests' toy world (shared by test_sim.py, test_sim_validation.py and test_sim_fairness.py).

One GPU type "g" (1 node x 2 GPUs). Two applications whose true rate is exactly 1 progress unit per second on any
GPU count: T_c = alpha_c = 1 s per step (beta_c = 0), no network time within a node (alpha_r = beta_r = 0),
gamma = 1, and grad_var = 0 so the gain is 1 at every batch. "short" needs 20 units (epochs end at 10, 20),
"long" 80 (epochs end at 40, 80). Restart delay 30 s.
"""

from __future__ import annotations

import numpy as np

from schedopt.goodput import JobGoodputModel, ThroughputParams
from schedopt.sia import Cluster, GpuType
from schedopt.sim import JobModel
from schedopt.sim.jobs import Application


def _toy_app(name: str, progress: list[float]) -> tuple[Application, JobGoodputModel]:
    e = len(progress)
    app = Application(name, np.array([8.0]), e, np.array(progress), np.ones((e, 1)), np.zeros((e, 1)))
    truth = JobGoodputModel(name, {"g": ThroughputParams(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)}, 8, 8, {"g": (1, 8)},
                            (8.0,), (1.0,), (0.0,))
    return app, truth


TOY = JobModel("toy", default_restart=30.0, apps={"short": _toy_app("short", [10, 20]), "long": _toy_app("long", [40, 80])})
TOY_CLUSTER = Cluster((GpuType("g", 2, 1),))
