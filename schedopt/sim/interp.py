"""``numpy.interp`` at one point, in Python floats (issue 42: the job model's gradient statistics and measured step
times interpolate one point at a time, about 15,000 calls in a saturn/1 run and its fairness summary, where
``np.interp``'s array conversions cost 2 us a call).

:func:`interp` is numpy's algorithm (``arr_interp`` in ``numpy/_core/src/multiarray/compiled_base.c``) step for
step: the same index (the last ``xp[j] <= x``), the same end and exact-hit cases, and the same IEEE operations in the
same order (``slope * (x - xp[j]) + fp[j]`` with ``slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])``, and its
retry from the right end of the interval when that is nan), so the same float;
``tests/test_sim_interp.py`` compares the two on random tables and points and on every shipped table.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence

__all__ = ["interp"]


def interp(x: float, xp: Sequence[float], fp: Sequence[float]) -> float:
    """``float(np.interp(x, xp, fp))`` for one point ``x``.

    Parameters
    ----------
    x : float
        The point.
    xp : sequence of float
        The table's abscissae, strictly increasing (at least one).
    fp : sequence of float
        The table's values, as many as ``xp``.

    Returns
    -------
    float
        ``fp[0]`` left of the table, ``fp[-1]`` right of it, else the linear interpolation between the two
        neighbouring entries (``fp[j]`` where ``x`` equals ``xp[j]``); nan for a nan ``x``.
    """
    x = float(x)
    n = len(xp)
    if n == 1:
        return float(fp[0])  # np.interp: left, right or the value: all fp[0] without left= / right=
    if math.isnan(x):
        return x
    j = bisect_right(xp, x) - 1
    if j < 0:
        return float(fp[0])
    if j >= n - 1:  # x > xp[-1], or x == xp[-1]
        return float(fp[n - 1])
    x0, y0 = xp[j], fp[j]
    if x0 == x:
        return float(y0)
    y1 = fp[j + 1]
    slope = (y1 - y0) / (xp[j + 1] - x0)
    y = slope * (x - x0) + y0
    if math.isnan(y):  # numpy: if nan in one direction, try the other
        y = slope * (x - xp[j + 1]) + y1
        if math.isnan(y) and y0 == y1:
            y = y0
    return float(y)
