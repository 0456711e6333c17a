"""``JobState.advance`` records configurations and re-batches an adaptive data-parallel job inline; it must be the
general route (``JobState._observe`` and ``JobState.rebatch`` at every step) state for state, float for float."""

from __future__ import annotations

import copy
import random

import pytest

from schedopt.sia import Config
from schedopt.sim.jobs import POLLUX, SIA, SIA_MEASURED, JobModel, JobState, applications, true_model


def _advance_by_the_general_route(j: JobState, t0: float, seconds: float) -> None:
    """The advance written with ``_observe`` and ``rebatch`` at every epoch step, as it was before the inline
    paths."""
    g = sum(j.nodes.values())
    if not g or j.finish is not None:
        return
    t, left = t0, seconds
    d = min(j.restart_left, left)
    j.restart_left -= d
    t += d
    left -= d
    app = j.application
    while left > 0:
        rate = j.rate() * j.share
        if rate <= 0:
            t += left
            break
        j._observe()
        need = (float(app.progress[j.epoch]) - j.progress) / rate
        if need > left:
            j.progress += rate * left
            t += left
            left = 0.0
            break
        t += need
        left -= need
        j.epoch += 1
        j.progress = float(app.progress[j.epoch - 1])
        if j.epoch >= app.epochs:
            j.finish = t
            break
        j.rebatch()
    if j.finish is None:
        t = t0 + seconds
    j.attained += (t - t0) * g
    if j.segments:
        j.segments[-1][1] = t


def _state(j: JobState) -> tuple:
    return (j.progress.hex(), j.epoch, j.local_bsz, j.accum, j.seen, j.restart_left, j.attained.hex(),
            None if j.finish is None else j.finish.hex(), [list(s) for s in j.segments], j._rate)


@pytest.mark.parametrize("jm", [POLLUX, SIA, pytest.param(SIA_MEASURED, marks=pytest.mark.slow)],
                         ids=lambda m: m.name)  # (the measured tables load in about 1.5 s)
def test_advance_equals_the_general_route_on_random_jobs(jm: JobModel) -> None:
    """Adaptive, rigid and strong-scaling jobs of every application, on random placements of their GPU types that
    change between rounds, advanced over random round lengths until they finish: the same state after every call."""
    rng = random.Random(sum(map(ord, jm.name)))
    names = sorted(a for a in applications() if a in {"cifar10", "bert", "deepspeech2", "imagenet", "ncf", "yolov3"})
    if jm.measured:  # the measured tables' triangulations take seconds: one application, one type
        names = ["ncf"]
    jm_strong = JobModel(jm.name, restart_seconds=jm.restart_seconds, slowdown=jm.slowdown,
                         max_local_bsz=jm.max_local_bsz, rigid_apps=jm.rigid_apps, measured=jm.measured,
                         strong_jobs=frozenset({"s"}))
    for app in names:
        types = sorted(true_model(app).params)[:1 if jm.measured else None]
        for jid, adaptive in (("a", True), ("r", False), ("s", True)):
            a = JobState(jid, app, 0.0, rng.choice([1, 2, 4, 8]), 256, adaptive, jm_strong)
            b = copy.deepcopy(a)
            t = 0.0
            for _ in range(40):
                if a.finish is not None:
                    break
                if rng.random() < 0.3 or not a.nodes:
                    gt = rng.choice(types)
                    per = rng.choice([1, 2, 4, 8])
                    gpus = a.rigid_shape[0] if a.rigid_shape else rng.choice([1, 2, 3, 4, 8, 16])
                    nodes = {f"n{k}": min(per, gpus - k * per) for k in range(-(-gpus // per))}
                    delay = rng.choice([0.0, 30.0])
                    for j in (a, b):
                        j.nodes = dict(nodes)
                        j.config = Config(len(nodes), gpus, gt)
                        j.restart_left = delay
                        j.segments.append([t, t, gt, gpus])
                        j.rebatch()
                R = rng.choice([60.0, 600.0, 3600.0])
                a.advance(t, R)
                _advance_by_the_general_route(b, t, R)
                assert _state(a) == _state(b), (app, jid, t)
                t += R
