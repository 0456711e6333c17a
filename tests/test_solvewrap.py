"""The solve's wrapper made cheaper per call (issue 42, item 4): the same results and the same Ctrl-C behaviour.

``SolveResult.replace`` / ``Timings.replace`` / ``Timings.add`` against ``dataclasses.replace``, ``SolveParams.for_call``
against ``copy.copy``, :func:`schedopt.results.solution_violation` against the unshortened computation on random
inputs, and :func:`schedopt.interrupt.run_interruptible` with real SIGINTs raised in the process.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import signal
import threading
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import schedopt
from schedopt.errors import ResultInvariantError
from schedopt.interrupt import run_interruptible
from schedopt.model import ModelArrays
from schedopt.params import SolveParams
from schedopt.results import Limit, SolveResult, Timings, solution_violation


def _knapsack() -> schedopt.LinearModel:
    m = schedopt.LinearModel("knapsack", sense="maximize")
    m.add_variables("x", 4, kind="binary", labels=list("abcd"))
    m.add_constraints("weight", {"x": [[2, 3, 4, 5]]}, upper=7, labels=["w"])
    m.set_objective({"x": [3, 4, 5, 6]})
    return m


def _fields(r: SolveResult) -> dict[str, object]:
    return {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}


def _same(a: SolveResult, b: SolveResult) -> None:
    fa, fb = _fields(a), _fields(b)
    assert fa.keys() == fb.keys()
    for k in fa:
        va, vb = fa[k], fb[k]
        if isinstance(va, np.ndarray) or isinstance(vb, np.ndarray):
            assert isinstance(va, np.ndarray) and isinstance(vb, np.ndarray)
            assert va.dtype == vb.dtype and np.array_equal(va, vb) and va.flags.writeable == vb.flags.writeable
        elif isinstance(va, float) and math.isnan(va):
            assert isinstance(vb, float) and math.isnan(vb)
        else:
            assert va == vb, k


def test_result_replace_is_dataclasses_replace() -> None:
    res = schedopt.solve(_knapsack(), backend="mckp")
    assert res.objective == 9.0
    for changes in ({"params": {"a": 1}}, {"backend": "other", "stats": {"n": 2}},
                    {"timings": Timings(build=0.5, solve=0.25)}, {"bound": 9.0}, {"_x": np.array([0, 1, 1, 0])},
                    {}):
        new, ref = res.replace(**changes), dataclasses.replace(res, **changes)
        _same(new, ref)
        assert not new.x.flags.writeable and new.x.dtype == np.float64
    # a changed solution is copied (private and read-only); an unchanged one is the checked copy already held
    given = np.array([0.0, 1.0, 1.0, 0.0])
    new = res.replace(_x=given)
    given[0] = 7.0
    assert new.x.tolist() == [0.0, 1.0, 1.0, 0.0] and not np.shares_memory(new.x, given)
    # the same checks as a new result: a bound below a maximisation's objective, an unknown field
    with pytest.raises(ResultInvariantError, match="lies below the objective"):
        res.replace(bound=5.0)
    with pytest.raises(ResultInvariantError, match="lies below the objective"):
        dataclasses.replace(res, bound=5.0)
    with pytest.raises(TypeError, match="no_such_field"):
        res.replace(no_such_field=1)
    with pytest.raises(ResultInvariantError, match="must be a Timings"):
        res.replace(timings={"solve": 1.0})
    _same(res.with_timings(build=0.125), dataclasses.replace(res, timings=dataclasses.replace(res.timings, build=0.125)))


def test_timings_replace_and_add() -> None:
    t = Timings(handoff=0.5, solve=0.25, decode=0.125)
    assert t.replace(build=1.0) == dataclasses.replace(t, build=1.0) == Timings(1.0, 0.5, 0.25, 0.125)
    assert t.add(handoff=0.25, build=2.0) == Timings(2.0, 0.75, 0.25, 0.125)  # a NaN build counts as 0
    assert t.add(solve=1).solve == 1.25 and t.add().as_dict().keys() == t.as_dict().keys()
    with pytest.raises(TypeError):
        t.replace(nope=1.0)
    with pytest.raises(KeyError):
        t.add(nope=1.0)


def test_for_call_is_a_copy() -> None:
    p = SolveParams(time_limit=5, mip_rel_gap=1e-4, threads=2, seed=3, options={"exact": True}, raw_options={"r": 1})
    ws = np.arange(3.0)
    out = p.for_call(warm_start=ws, sub_solve=schedopt.solve)
    ref = copy.copy(p)
    object.__setattr__(ref, "warm_start", ws)
    object.__setattr__(ref, "sub_solve", schedopt.solve)
    assert type(out) is SolveParams and out.__dict__.keys() == ref.__dict__.keys()
    assert all(out.__dict__[k] is ref.__dict__[k] for k in ref.__dict__)
    assert p.warm_start is None and p.sub_solve is None  # the original is unchanged


def _violation_unshortened(a: Any, x: np.ndarray, tol: float = 1e-6) -> str | None:
    """The bounds and integrality checks of :func:`solution_violation` before their shortcuts (the oracle; the
    rows' part is unchanged and is the function's own, on a model without rows)."""
    integ = a.integrality == 1
    ax = np.abs(x)
    scale = np.maximum(1.0, ax)
    allowed = np.where(integ, np.minimum(tol * scale, 0.5), tol * scale)
    over = np.maximum(a.col_lower - x, x - a.col_upper) - allowed
    j = int(np.argmax(over)) if over.size else 0
    if over.size and over[j] > 0:
        return (f"column {j} = {x[j]:.17g} outside its bounds [{a.col_lower[j]:.17g}, "
                f"{a.col_upper[j]:.17g}]")
    if integ.any():
        frac = np.where(integ, np.abs(x - np.round(x)), 0.0)
        j = int(np.argmax(frac))
        if frac[j] > 1e-5:
            return f"integer column {j} = {x[j]:.10g} is fractional"
    return None


def test_solution_violation_shortcuts_random() -> None:
    """Random columns (integer or not, bounds finite or not) and points on, near and past their bounds and
    integers: the same answer as the unshortened checks, message for message, at several tolerances."""
    rng = np.random.default_rng(42)
    seen: dict[str, int] = {}
    for _ in range(1500):
        n = int(rng.integers(0, 7))
        lo = rng.choice([-np.inf, -3.0, 0.0, 1.0], size=n)
        width = rng.choice([0.0, 1.0, 2.5, np.inf], size=n)
        hi = np.where(np.isinf(width), np.inf, lo + np.where(np.isinf(width), 0.0, width))
        integ = rng.integers(0, 2, size=n).astype(np.int8)
        base = np.where(np.isfinite(lo), lo, np.where(np.isfinite(hi), hi, 0.0)) + rng.integers(0, 3, size=n)
        eps = rng.choice([0.0, 1e-7, -1e-7, 2e-6, -2e-6, 1e-5, 3e-5, 0.4, 0.6, -1.0, 1e3], size=n)
        x = base + eps * rng.choice([1.0, 1e3], size=n)
        arrays = ModelArrays(np.zeros(n), sp.csr_matrix((0, n)), np.zeros(0), np.zeros(0), lo, hi, integ, False, 0.0)
        for tol in (1e-6, 0.0, 1e-3, 0.5, 0.7, -1e-9):
            got = solution_violation(arrays, x, tol)
            assert got == _violation_unshortened(arrays, x, tol), (lo, hi, integ, x, tol)
            kind = "none" if got is None else "bounds" if "outside its bounds" in got else "fractional"
            seen[kind] = seen.get(kind, 0) + 1
    assert min(seen.get(k, 0) for k in ("none", "bounds", "fractional")) > 500, seen  # every case met


def test_run_interruptible_restores_the_handler_and_stops_on_sigint() -> None:
    """A real SIGINT in the middle of an in-place call and of a worker-thread call: the first one calls ``stop``
    (the call returns with ``interrupted``), a second one raises KeyboardInterrupt; the caller's handler is back
    afterwards, the same object."""
    assert threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGINT)
    for in_place in (True, False):
        stopped = threading.Event()

        def call(in_place: bool = in_place, stopped: threading.Event = stopped) -> str:
            if in_place:
                signal.raise_signal(signal.SIGINT)
            for _ in range(2000):  # a solve's loop: it ends at its next check of the stop flag
                if stopped.wait(0.005):
                    return "stopped"
            return "ran out"

        if not in_place:  # the main thread waits in Python for the worker: the SIGINT comes from a timer thread
            threading.Timer(0.05, signal.raise_signal, (signal.SIGINT,)).start()
        value, interrupted = run_interruptible(call, stopped.set, in_place=in_place)
        assert (value, interrupted) == ("stopped", True)
        assert signal.getsignal(signal.SIGINT) is before
        value, interrupted = run_interruptible(lambda: 7, lambda: None, in_place=in_place)
        assert (value, interrupted) == (7, False)

    def twice() -> None:
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        run_interruptible(twice, lambda: None, in_place=True)
    assert signal.getsignal(signal.SIGINT) is before


def test_mckp_solve_interrupted_by_sigint() -> None:
    """The whole route: a SIGINT while ``schedopt.solve`` runs mckp in place ends it with what it holds."""
    from schedopt.mckp import solver as ms

    m = _knapsack()
    orig = ms.MckpSolver.run

    def run(self: ms.MckpSolver) -> ms.MckpOutcome:
        signal.raise_signal(signal.SIGINT)  # the solver's stop flag is set before its first step
        return orig(self)

    ms.MckpSolver.run = run  # type: ignore[method-assign]
    try:
        res = schedopt.solve(m, backend="mckp")
    finally:
        ms.MckpSolver.run = orig  # type: ignore[method-assign]
    # it stops at its first check, after the repair, with the repair's 7 (the optimum is 9), and says so
    assert res.termination.reason is schedopt.TerminationReason.FEASIBLE
    assert res.termination.limit is Limit.INTERRUPTED and "interrupted" in res.termination.detail
    assert res.objective == 7.0 and res.bound >= 9.0
    again = schedopt.solve(m, backend="mckp")
    assert again.objective == 9.0 and again.termination.limit is None


def test_a_cancel_from_the_thread_inside_push_or_pop_does_not_hang() -> None:
    """A SIGINT's handler runs ``cancel()`` in the main thread between two bytecodes, possibly while that thread is
    inside ``push`` or ``pop`` of the same scope (a nested in-place solve), holding its lock: the cancel must go
    through (it hung on a plain ``threading.Lock``). Run in a daemon thread so that a regression fails, not hangs."""
    import threading

    from schedopt.interrupt import StopScope

    scope, called, done = StopScope(), [], threading.Event()

    def inside_push() -> None:
        scope.push(lambda: called.append("outer"))
        with scope._lock:  # as push / pop hold it when the handler interrupts them
            scope.cancel()
        done.set()

    t = threading.Thread(target=inside_push, daemon=True)
    t.start()
    t.join(5.0)
    assert done.is_set() and scope.cancelled and called == ["outer"]
