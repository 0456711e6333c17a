import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# ------------------------------------------------------------------ every backend, python-mip style
import pytest  # noqa: E402

import schedopt  # noqa: E402


def _backend_params() -> list:
    """Every registered backend: installed ones run, missing ones are skipped with the reason."""
    out = []
    for name, info in sorted(schedopt.available_backends(include_missing=True).items()):
        marks = () if info.available else (pytest.mark.skip(reason=f"backend {name!r} not installed: {info.reason}"),)
        out.append(pytest.param(name, marks=marks, id=name))
    return out


@pytest.fixture(params=_backend_params())
def any_backend(request: pytest.FixtureRequest) -> str:
    """The name of one backend: tests taking this fixture run once per installed backend."""
    return request.param


@pytest.fixture(scope="session")
def small_csv(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The first 12 jobs of Pollux's workload-1 with at most 4 GPUs each, as a CSV file (the simulator's sweep and
    progress tests)."""
    from schedopt.sim import load_workload
    from schedopt.sim.workloads import Workload

    w = load_workload("pollux/1")
    p = tmp_path_factory.mktemp("wl") / "small.csv"
    p.write_text(Workload("small", tuple(j for j in w.jobs if j.num_replicas <= 4)[:12]).to_csv())
    return str(p)
