"""The simulator's round at 2,048 GPUs (issue 38: ``Session.decide`` p99 under 100 ms) cut per-job Python; each
fast path here is compared, value for value, with the general route it stands for, on random inputs."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import pytest

from schedopt.errors import InputError
from schedopt.sia import Config, Job, Placement, SiaSettings, generate_configs
from schedopt.sia.pairs import NO_LIMIT, RIGID, job_arrays
from schedopt.sia.validate import OUTSIDE_TABLE, check_jobs
from schedopt.sim import cluster_preset, make_policy
from schedopt.sim.engine import _check_counts, _check_placement, _from_allocation
from schedopt.sim.jobs import JobState, job_model
from schedopt.sim.policies.base import GpuRequest, JobView, RoundState
from schedopt.sim.roles import SiaPlacer
from tests.test_live_fastpaths import _jobs_from_scratch

_TYPES = ("t4", "v100", "a100")


def _random_job(rng: random.Random, i: int) -> Job:
    kind = rng.choice(("adaptive", "adaptive", "strong", "rigid"))
    cur = rng.choice((None, Config(1, rng.choice((1, 2, 4)), rng.choice(_TYPES)), Config(2, 16, "a100")))
    common = {"current": cur, "age_s": rng.choice((0.0, rng.uniform(0, 1e5), 7)),
              "restarts": rng.randrange(0, 5), "restart_cost_s": rng.choice((0.0, 30.0, 250.0)),
              "preemptible": rng.random() < 0.7 or cur is None,
              "attained_gpu_seconds": rng.uniform(0, 1e6),
              "allowed_types": rng.choice((None, None, ("a100",), ("t4", "v100")))}
    if kind == "rigid":
        return Job(id=f"j{i}", kind="rigid", rigid_gpus=rng.choice((1, 2, 3, 8)), batch_size=64.0, **common)
    unit = rng.choice((1, 1, 2))
    mx = rng.choice((None, 8, 64))
    return Job(id=f"j{i}", kind=kind, min_gpus=rng.choice((1, 2)), max_gpus=mx, scale_unit=unit,
               max_profiled_gpus=rng.choice((0, 1, 4)), batch_size=128.0 if kind == "strong" else None, **common)


def _job_arrays_by_rows(jobs: list[Job], type_names: tuple[str, ...], current: np.ndarray) -> dict[str, np.ndarray]:
    """job_arrays as it was: one tuple per job, one array of them."""
    code = {"adaptive": 0, "strong": 1, "rigid": 2}
    J = len(jobs)
    ints = np.array([(code[j.kind], j.min_gpus, -1 if j.max_gpus is None else j.max_gpus, j.scale_unit,
                      j.max_profiled_gpus, j.rigid_gpus or 0, j.restarts,
                      (not j.preemptible) and j.current is not None) for j in jobs], dtype=np.int64).reshape(J, 8)
    floats = np.array([(j.age_s, j.restart_cost_s, j.attained_gpu_seconds) for j in jobs],
                      dtype=np.float64).reshape(J, 3)
    allowed = np.ones((J, len(type_names)), dtype=bool)
    for i, j in enumerate(jobs):
        if j.allowed_types is not None:
            allowed[i] = False
            allowed[i, [type_names.index(t) for t in j.allowed_types]] = True
    kind, mn, mx, unit, prof, rigid = (ints[:, k].copy() for k in range(6))
    u = np.where(kind == RIGID, rigid, -(-mn // unit) * unit)
    return {"kind": kind, "min": mn, "max": np.where(mx < 0, NO_LIMIT, mx), "unit": unit,
            "growth": np.maximum(2 * prof, u), "rigid": rigid, "allowed": allowed, "current": current,
            "forced": ints[:, 7].astype(bool), "age": floats[:, 0].copy(), "restarts": ints[:, 6].astype(np.float64),
            "rcost": floats[:, 1].copy(), "attained": floats[:, 2].copy()}


@pytest.mark.parametrize("seed", range(6))
def test_job_arrays_by_columns_equal_the_rows(seed: int) -> None:
    rng = random.Random(seed)
    jobs = [_random_job(rng, i) for i in range(rng.choice((0, 1, 7, 200)))]
    current = np.array([rng.randrange(-2, 30) for _ in jobs], dtype=np.int64)
    got = job_arrays(jobs, _TYPES, current)
    want = _job_arrays_by_rows(jobs, _TYPES, current)
    for name, arr in want.items():
        a = getattr(got, name)
        assert a.dtype == arr.dtype and a.shape == arr.shape and np.array_equal(a, arr), name
    if jobs:  # the hand-checked corner: a job not preemptible in a configuration is forced, one queued is not
        assert got.forced.tolist() == [(not j.preemptible) and j.current is not None for j in jobs]


def _check_placement_as_it_was(cluster: Any, pname: str, placer: Any, chosen: Any, pl: Any) -> None:
    """schedopt.sim.engine._check_placement before the round's cut (a set of types per job)."""
    ntype = {nid: (t.name, g) for t in cluster.gpu_types for nid, g in zip(t.ids, t.sizes)}
    seen: dict[str, set[int]] = {}
    for jid, slots in pl.assignments.items():
        want = chosen.get(jid) if isinstance(jid, str) else None
        if want is None:
            raise InputError(f"placer[{placer.name}].assignments[{jid}]", slots,
                             f"places a job policy {pname} did not ask to place")
        n = 0
        for nid, gs in slots:
            nt = ntype.get(nid) if isinstance(nid, str) else None
            if nt is None:
                raise InputError(f"placer[{placer.name}].assignments[{jid}]", nid, "names no node of the cluster")
            used = seen.setdefault(nid, set())
            R = nt[1]
            if gs and (min(gs) < 0 or max(gs) >= R or not used.isdisjoint(gs) or len(set(gs)) != len(gs)):
                for g in gs:
                    if not (0 <= g < R) or g in used:
                        raise InputError(f"placer[{placer.name}].assignments[{jid}]", (nid, g),
                                         "is not a free GPU of the node")
                    used.add(g)
            used.update(gs)
            n += len(gs)
        types = {ntype[nid][0] for nid, gs in slots if gs}
        wt = want.gpu_type
        if n != (want.n_gpus if isinstance(want, Config) else want.gpus) or len(types) != 1 or (
                wt is not None and types != {wt}):
            raise InputError(f"placer[{placer.name}].assignments[{jid}]", slots,
                             f"does not give the job what it asked for ({want})")
        if jid not in pl.configs:
            raise InputError(f"placer[{placer.name}].configs", jid, "has no configuration for a placed job")


def _outcome(f: Any, *args: Any) -> str:
    try:
        f(*args)
    except InputError as e:
        return str(e)
    return "ok"


def test_check_placement_answers_as_it_did_on_random_placements() -> None:
    cluster = cluster_preset("sia-64")
    placer = SiaPlacer()
    rng = random.Random(5)
    outcomes: set[str] = set()
    for trial in range(300):
        sizes = [(t.name, 1 << rng.randrange(0, 3)) for t in cluster.gpu_types for _ in range(3)]
        chosen: dict[str, Any] = {f"j{i}": (Config(1, g, t) if rng.random() < 0.8 else GpuRequest(g, rng.choice(
            (None, t)))) for i, (t, g) in enumerate(sizes)}
        pl = SiaPlacer().place(cluster, chosen, None)
        assign = {j: [(n, list(gs)) for n, gs in s] for j, s in pl.assignments.items()}
        configs = dict(pl.configs)
        if assign and trial % 4:  # corrupt one thing: a GPU out of the node or twice, a node or type or job unknown
            j = rng.choice(sorted(assign))
            what = rng.randrange(8)
            n0, gs0 = assign[j][0]
            if what == 0:
                gs0.append(99)
            elif what == 1:
                gs0.append(gs0[0])
            elif what == 2:
                assign[j][0] = ("nowhere-0", gs0)
            elif what == 3:
                other = next(t for t in cluster.gpu_types if not n0.startswith(t.name + "-"))
                assign[j].append((other.ids[-1], [0]))
            elif what == 4:
                assign[j][0] = (n0, [])
            elif what == 5:
                assign["stranger"] = [(n0, [0])]
            elif what == 6:
                del configs[j]
            else:
                k = rng.choice(sorted(assign))
                assign[k].append(assign[j][0])
        placed = Placement(assignments={j: [(n, tuple(gs)) for n, gs in s] for j, s in assign.items()},
                           configs=configs)
        want = _outcome(_check_placement_as_it_was, cluster, "sia", placer, chosen, placed)
        assert _outcome(_check_placement, cluster, "sia", placer, chosen, placed) == want
        outcomes.add(want.split(":")[-1].strip()[:20])
    assert len(outcomes) >= 5  # valid placements and several kinds of error met


def test_allocation_counts_are_refused_as_check_counts_refuses_them() -> None:
    """_from_allocation asks _check_counts only of rigid jobs and of jobs over their cap (its only ways to fail):
    on random jobs (adaptive, rigid, rigid of an elastic application) and counts, it refuses exactly what
    _check_counts refuses, with its message."""
    cluster = cluster_preset("sia-64")
    rng = random.Random(11)
    refused = 0
    for jm_name in ("sia", "pollux"):
        jm = job_model(jm_name)
        for i in range(120):
            app = rng.choice(("cifar10", "bert", "imagenet", "ncf", "deepspeech2", "yolov3"))
            j = JobState(f"j{i}", app, 0.0, rng.choice((1, 2, 4, 8)), 64, rng.random() < 0.7, jm,
                         max_profiled=rng.choice((0, 1, 2, 4, 16)))
            c = Config(1, rng.choice((1, 2, 4, 8)), "a100")
            want = _outcome(_check_counts, f"policy[p].allocation[{j.id}]", j, c.n_gpus)
            got = _outcome(_from_allocation, cluster, "p", {j.id: c}, {}, {j.id: j}, None, SiaPlacer())
            assert got == want
            refused += want != "ok"
    assert 20 <= refused <= 220  # both outcomes met


def test_check_jobs_finds_each_current_configuration_as_find_does() -> None:
    """check_jobs looks a configuration object up once per call: on random jobs sharing objects, holding equal
    but distinct ones, rigid-only shapes (3 GPUs on a 4-GPU node) and shapes outside a capped table, the positions
    are configs.find's, -1 for an elastic job in a rigid-only shape, OUTSIDE_TABLE for one the cap removed."""
    cluster = cluster_preset("sia-64")
    table = generate_configs(cluster, 8, rigid_counts=(3,))
    rng = random.Random(3)
    shared = [Config(1, 3, "t4"), Config(1, 2, "a100"), Config(2, 16, "a100"), Config(1, 4, "t4")]
    jobs = []
    for i in range(300):
        c = rng.choice((None, rng.choice(shared), Config(1, 3, "t4"), Config(2, 16, "a100"), Config(1, 8, "a100")))
        if rng.random() < 0.4:
            jobs.append(Job(id=f"j{i}", kind="rigid", rigid_gpus=c.n_gpus if c is not None and c.n_gpus <= 8 else 3,
                            current=c))
        elif c is None or c.n_gpus != 3:
            jobs.append(Job(id=f"j{i}", current=c))
    _, cur = check_jobs(cluster, table, jobs, SiaSettings(), 8)
    want = []
    for j in jobs:
        f = -1 if j.current is None else table.find(j.current)
        if j.current is not None and f >= 0 and table.rigid_only[f] and j.kind != "rigid":
            f = -1
        want.append(OUTSIDE_TABLE if j.current is not None and f < 0 else f)
    assert cur.tolist() == want
    assert {-1, OUTSIDE_TABLE} < set(want) and any(table.rigid_only[f] for f in want if f >= 0)


_NO_ESTIMATE: Any = None  # (SiaPolicy.jobs reads no estimate)


def _view(rng: random.Random, i: int, t: float) -> JobView:
    kind = rng.choice(("adaptive", "adaptive", "strong", "rigid"))
    cur = rng.choice((None, Config(1, 2, "a100"), Config(1, 4, "t4")))
    return JobView(id=f"j{i}", application=rng.choice(("cifar10", "bert")), arrival=0.0, age=t,
                   attained_gpu_seconds=0.0, restarts=rng.randrange(3), requested_gpus=rng.choice((1, 2, 4)),
                   batch_size=64, adaptive=kind != "rigid", current=cur, current_nodes={}, estimate=_NO_ESTIMATE,
                   progress=0.1, max_gpus=rng.choice((2, 4, 8, 16, 64)), kind=kind,
                   scale_units=rng.choice(({}, {}, {"a100": 2})))


def test_sia_jobs_with_new_caps_equal_the_jobs_built_from_scratch() -> None:
    """SiaPolicy.jobs copies last round's Job of a job whose cap (max_gpus) alone changed: over rounds of random
    views (kinds, caps including 0, scale units), every Job equals one built from scratch, and a cap Job refuses
    raises as Job raises."""
    policy = make_policy("sia")
    rng = random.Random(7)
    views = [_view(rng, i, 0.0) for i in range(60)]
    refused = copied = 0
    for k in range(1, 12):
        t = 60.0 * k
        views = [dataclasses.replace(v, age=t, max_gpus=rng.choice((2, 4, 8, 16, 64) if v.scale_units else (1, 2, 64)),
                                     current=rng.choice((v.current, None)))
                 if rng.random() < 0.5 else dataclasses.replace(v, age=t) for v in views]
        if k % 4 == 0:  # one adaptive job's cap below every count it may run at: Job refuses it
            bad = rng.choice([i for i, v in enumerate(views) if v.adaptive])
            views[bad] = dataclasses.replace(views[bad], max_gpus=0)
        state = RoundState(time=t, round_index=k, round_seconds=60.0, cluster=cluster_preset("sia-64"),
                           jobs=tuple(views), placement=None)
        before, seen = dict(policy._jobs), dict(policy._changed)
        try:
            got = policy.jobs(state)
        except InputError as e:
            refused += 1  # the first view whose Job refuses its cap, named as Job names it
            assert str(e) == _outcome(_jobs_from_scratch, policy, state, dict.fromkeys(policy._changed, False))
            views = [dataclasses.replace(v, max_gpus=max(v.max_gpus, 2)) for v in views]
            policy._jobs, policy._changed = before, seen
            continue
        pinned = {j.id: not j.preemptible for j in got}
        assert got == _jobs_from_scratch(policy, state, pinned)
        copied += sum(1 for v in views if v.id in before and before[v.id][0][1] is not v.max_gpus)
    assert refused and copied > 20
