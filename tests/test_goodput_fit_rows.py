"""Issue 42: the estimator's refit (``_fit_rows``) fits its checked rows without ``fit_throughput``'s input checks
(``fit_checked``), and returns ``fit_throughput``'s parameters exactly; what it cannot vouch for still goes
through ``fit_throughput``, which raises as before."""

from __future__ import annotations

import random

import pytest

from schedopt import zoo
from schedopt.errors import InputError
from schedopt.goodput import blas_threads, fit_throughput
from schedopt.goodput._estimator import _fit_rows


def _history(rng: random.Random) -> tuple[tuple[tuple[float, float], ...], tuple[tuple[int, int, float, float, float], ...]]:
    """A 1-GPU profile and a few measured multi-GPU rows of a zoo application on one of its types (step and sync
    times from the fitted truth, jittered), as an estimator holds them."""
    m = zoo.load_model(rng.choice(["cifar10", "imagenet", "bert", "deepspeech2", "yolov3"]))
    t = rng.choice(sorted(m.params))
    p, (lo, hi) = m.params[t], m.local_bsz_limits[t]
    prof = tuple((float(b), float(p.step_time(1, 1, b)) * rng.uniform(0.95, 1.05))
                 for b in sorted({lo, hi, rng.randint(lo, hi)}))
    rows = []
    for _ in range(rng.randint(1, 6)):
        n = rng.randint(1, 3)
        r = n * rng.choice([1, 2, 4])
        b = float(rng.randint(lo, hi))
        step = float(p.step_time(n, r, b)) * rng.uniform(0.9, 1.1)
        sync = step - float(p.compute_time(b)) if r > 1 else 0.0
        rows.append((n, r, b, step, min(max(sync, 0.0), step * (1 - 1e-9))))
    return prof, tuple(rows)


def _public(prof, rows, starts):  # type: ignore[no-untyped-def]
    return fit_throughput([1] * len(prof) + [m[0] for m in rows], [1] * len(prof) + [m[1] for m in rows],
                          [b for b, _ in prof] + [m[2] for m in rows], [s for _, s in prof] + [m[3] for m in rows],
                          [0.0] * len(prof) + [m[4] for m in rows], gamma_starts=starts)


def test_the_refit_equals_fit_throughput_exactly() -> None:
    """Random histories (one to six measured rows on one type, one or two starting gammas): the refit's parameters
    are ``fit_throughput``'s, float for float."""
    rng = random.Random(42)
    with blas_threads(1):
        for _ in range(12):
            prof, rows = _history(rng)
            starts = rng.choice([(1.0,), (1.0, 2.5)])
            assert _fit_rows.__wrapped__(prof, rows, starts) == _public(prof, rows, starts)


def test_starts_the_refit_cannot_vouch_for_go_through_fit_throughput() -> None:
    """A start outside [1, 10] raises fit_throughput's InputError; integer starts take fit_throughput's conversion
    and give its answer."""
    rng = random.Random(7)
    prof, rows = _history(rng)
    with pytest.raises(InputError) as e:
        _fit_rows.__wrapped__(prof, rows, (0.5,))
    assert e.value.field == "gamma_starts"
    with blas_threads(1):
        assert _fit_rows.__wrapped__(prof, rows, (1, 3)) == _public(prof, rows, (1.0, 3.0))


def test_the_fits_median_is_numpys() -> None:
    """``_median`` (the network start's median in Python floats) equals ``np.median`` on random lists of one to 29
    values over many magnitudes, with ties, equal values and infinities; hand-checked: 2 and 2.5."""
    import numpy as np

    from schedopt.goodput._throughput import _median

    rng = np.random.default_rng(3)
    for _ in range(3000):
        a = rng.uniform(0, 1, int(rng.integers(1, 30))) * 10.0 ** rng.integers(-9, 3)
        if rng.random() < 0.3:
            a = np.round(a, 2)
        if rng.random() < 0.05:
            a[rng.integers(0, a.size)] = np.inf
        assert _median(a.tolist()) == float(np.median(a))
    assert _median([3.0, 1.0, 2.0]) == 2.0 and _median([4.0, 1.0, 2.0, 3.0]) == 2.5
