"""Issue 42: :func:`schedopt.sim.interp.interp` (``np.interp`` at one point in Python floats) gives numpy's float,
bit for bit, and the job model's two users of it (the gradient statistics, the measured placements' step times)
answer as they did with ``np.interp``."""

from __future__ import annotations

import math

import numpy as np

from schedopt.sim import measured
from schedopt.sim.interp import interp
from schedopt.sim.jobs import Application, applications


def _same(a: float, b: float) -> bool:
    """Equal as floats, sign of zero included; nan equals nan."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def test_interp_equals_numpy_on_random_tables_bit_for_bit() -> None:
    """Random strictly increasing tables of 1-11 entries over many magnitudes, points inside, outside, on every
    entry, at +-inf and nan, and tables holding inf (numpy's nan retry from the right end): every answer is
    ``np.interp``'s, called with the scalar point and with the whole array of points."""
    rng = np.random.default_rng(2026)
    checked = 0
    for _ in range(600):
        n = int(rng.integers(1, 12))
        xp = np.unique(rng.uniform(-100, 100, n) * 10.0 ** rng.integers(-3, 4))
        fp = rng.normal(size=xp.size) * 10.0 ** rng.integers(-6, 6)
        if rng.random() < 0.1 and xp.size > 1:  # an infinite value: nan in one direction
            fp[rng.integers(0, xp.size)] = rng.choice([np.inf, -np.inf])
        xs = np.concatenate([rng.uniform(xp.min() - 5, xp.max() + 5, 12), xp, [np.nan, np.inf, -np.inf, 0.0, -0.0]])
        whole = np.interp(xs, xp, fp)
        xl, fl = xp.tolist(), fp.tolist()
        for x, w in zip(xs.tolist(), whole.tolist()):
            got = interp(x, xl, fl)
            assert _same(got, w), (x, xl, fl, got, w)
            assert _same(got, float(np.interp(x, xp, fp))), (x, xl, fl)
            checked += 1
    assert checked > 10_000
    # hand-checked: halfway between (0, 1) and (2, 5); an exact hit; clamped at both ends; one entry
    assert interp(1.0, [0.0, 2.0], [1.0, 5.0]) == 3.0
    assert interp(2.0, [0.0, 2.0, 4.0], [1.0, 5.0, -1.0]) == 5.0
    assert interp(-3.0, [0.0, 2.0], [1.0, 5.0]) == 1.0 and interp(9.0, [0.0, 2.0], [1.0, 5.0]) == 5.0
    assert interp(math.nan, [1.0], [7.0]) == 7.0 and math.isnan(interp(math.nan, [0.0, 1.0], [7.0, 8.0]))


def test_the_gradient_statistics_are_np_interps_on_every_shipped_application() -> None:
    """Every application's every epoch, at its profiled batches, their midpoints, random batches and batches beyond
    both ends (ints and floats): ``Application.grad_stats`` equals ``np.interp`` on its tables, float for float."""
    rng = np.random.default_rng(5)
    for app in applications().values():
        assert app._lists is not None  # the shipped batches increase: the list route is taken
        b = app.batches
        qs = [*b.tolist(), *((b[1:] + b[:-1]) / 2).tolist(), *rng.uniform(b[0] / 2, b[-1] * 2, 8).tolist(),
              int(b[0]) - 1, int(b[-1]) + 7, float(b[-1]) * 3]
        for e in range(-1, app.epochs + 1, max(1, app.epochs // 7)):
            ee = min(max(e, 0), app.epochs - 1)
            for q in qs:
                want = (float(np.interp(q, b, app.grad_sqr[ee])), float(np.interp(q, b, app.grad_var[ee])))
                assert app.grad_stats(q, e) == want, (app.name, e, q)


def test_an_application_with_unsorted_batches_keeps_np_interp() -> None:
    """Batches that do not increase strictly take ``np.interp`` itself (the list route assumes them sorted)."""
    app = Application("x", np.array([64.0, 32.0]), 1, np.array([1.0]), np.array([[1.0, 3.0]]), np.array([[2.0, 4.0]]))
    assert app._lists is None
    assert app.grad_stats(48.0, 0) == (float(np.interp(48.0, app.batches, app.grad_sqr[0])),
                                       float(np.interp(48.0, app.batches, app.grad_var[0])))


def test_the_measured_placements_step_times_are_np_interps() -> None:
    """Every measured placement of every profile, at its measured batches, their midpoints and random batches in
    its range: ``MeasuredProfile.lookup`` equals ``np.interp`` on the placement's rows; outside the range, None."""
    rng = np.random.default_rng(11)
    n = 0
    for app in sorted(measured._doc()["applications"]):
        for gpu in measured.measured_types(app):
            prof = measured.profile(app, gpu)
            assert prof is not None
            for key, (b, st, sy) in prof.placements.items():
                pl = [int(c) for c in (key.split(",") if "," in key else key)]
                qs = [*b.tolist(), *((b[1:] + b[:-1]) / 2).tolist(), *rng.uniform(b[0], b[-1], 2).tolist()]
                for q in qs:
                    assert prof.lookup(pl, q) == (float(np.interp(q, b, st)), float(np.interp(q, b, sy)))
                    n += 1
                assert prof.lookup(pl, float(b[-1]) + 1.0) is None
    assert n > 1000
