"""The backend interface: capabilities, parameters, and the registry entry every solver adapter fills in."""

from __future__ import annotations

import difflib
import importlib.util
import math
import queue
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..results import Limit, SolveResult, Termination, TerminationReason, Timings, bound_tolerance

if TYPE_CHECKING:
    from ..model import LinearModel

__all__ = ["Backend", "Capabilities", "SolveParams", "run_interruptible"]


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do."""

    lp: bool = True
    mip: bool = True
    duals: bool = False
    iis: bool = False
    warm_start: bool = False
    time_limit_incumbent: bool = True  #: a time limit returns the best incumbent
    integer_only: bool = False  #: every variable must be integer (CP-SAT)
    structure: str | None = None  #: a model structure the backend requires (``"mckp"``), if any

    def as_dict(self) -> dict[str, Any]:
        return {
            "lp": self.lp,
            "mip": self.mip,
            "duals": self.duals,
            "iis": self.iis,
            "warm_start": self.warm_start,
            "time_limit_incumbent": self.time_limit_incumbent,
            "integer_only": self.integer_only,
            "structure": self.structure,
        }


@dataclass(frozen=True)
class SolveParams:
    """Solver-independent parameters; ``options`` are passed to the solver verbatim."""

    time_limit: float | None = None
    mip_rel_gap: float | None = 1e-6
    threads: int = 1
    seed: int = 0
    warm_start: Any = None
    verbose: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    #: ``schedopt.solve`` itself, handed to backends that need a sub-solve (a residual problem, a sub-model), so
    #: that no backend imports the dispatcher; ``None`` outside ``schedopt.solve``
    sub_solve: Callable[..., SolveResult] | None = field(default=None, compare=False, repr=False)

    @property
    def time_limit_or_inf(self) -> float:
        return math.inf if self.time_limit is None else float(self.time_limit)


class StopScope:
    """The stops of the solves running in one interruptible call's worker thread: a SIGINT in the main thread calls
    the outer solve's stop and every nested solve's (a CP-SAT residual inside mckp, ...)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stops: list[Callable[[], None]] = []
        self.cancelled = False

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            stops = list(self._stops)
        for stop in stops:
            stop()

    def push(self, stop: Callable[[], None]) -> None:
        with self._lock:
            self._stops.append(stop)
            cancelled = self.cancelled
        if cancelled:  # the stop came first: the nested solve is asked to stop at once
            stop()

    def pop(self, stop: Callable[[], None]) -> None:
        with self._lock:
            self._stops.remove(stop)


_THREAD = threading.local()  #: ``scope``: the StopScope of the interruptible call this worker thread runs


@contextmanager
def nested_stop_scope() -> Iterator[StopScope]:
    """Run the ``with`` body under a fresh stop scope in this thread: every solve nested in it
    (:func:`run_interruptible`) registers its stop there, so ``scope.cancel()`` from any thread stops just those
    solves (mckp's race: HiGHS on the whole model won, its residual solve is stopped), while a cancel of the
    enclosing scope (a Ctrl-C) still reaches them."""
    parent: StopScope | None = getattr(_THREAD, "scope", None)
    scope = StopScope()
    if parent is not None:
        parent.push(scope.cancel)
    _THREAD.scope = scope
    try:
        yield scope
    finally:
        _THREAD.scope = parent
        if parent is not None:
            parent.pop(scope.cancel)


class WorkerTask:
    """One call handed to the :func:`submit` pool: ``done`` is set when it ended, with ``value`` or ``error``."""

    def __init__(self, call: Callable[[], Any], scope: StopScope | None) -> None:
        self.call, self.scope = call, scope
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        """Run the call (``done`` is set by the worker once it is idle again, so a waiter woken by it finds the
        worker free for its next call)."""
        _THREAD.scope = self.scope
        try:
            self.value = self.call()
        except BaseException as exc:  # handed to whoever waits on the task
            self.error = exc
        finally:
            _THREAD.scope = None

    def result(self) -> Any:
        """Wait in Python (0.05 s slices, so a SIGINT handler of this thread runs) and return the value."""
        while not self.done.wait(0.05):
            pass
        if self.error is not None:
            raise self.error
        return self.value


class _Workers:
    """Daemon worker threads kept for the process's solves: an idle one takes the next task, a new one is started
    only when none is idle (a thread start per solve cost 0.1-0.2 ms on a quiet machine and several ms on a loaded
    one: 606 of them were 5 s of a saturn/1 profile at load 14). Daemon, as the one-thread-per-solve workers were:
    a solve still running after a second Ctrl-C never holds up the interpreter's exit."""

    def __init__(self) -> None:
        self._tasks: queue.SimpleQueue[WorkerTask] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self.started = 0

    def submit(self, task: WorkerTask) -> WorkerTask:
        with self._lock:
            spawn = self._idle == 0
            if spawn:
                self.started += 1
            else:
                self._idle -= 1
        if spawn:
            threading.Thread(target=self._loop, name="schedopt-solve", daemon=True).start()
        self._tasks.put(task)
        return task

    def _loop(self) -> None:
        while True:
            task = self._tasks.get()
            try:
                task.run()
            finally:
                with self._lock:
                    self._idle += 1
                task.done.set()


_WORKERS = _Workers()


def submit(call: Callable[[], Any], scope: StopScope | None = None) -> WorkerTask:
    """Run ``call()`` on one of the process's solve worker threads (``scope``: its stop scope there, so the solves
    nested in ``call`` register their stops with it); returns the :class:`WorkerTask` to wait on."""
    return _WORKERS.submit(WorkerTask(call, scope))


def _in_worker(call: Callable[[], Any], scope: StopScope) -> Any:
    """``call()`` on a worker thread whose nested solves join ``scope``, while this (main) thread waits in Python,
    where the SIGINT handler installed by the caller can run."""
    return submit(call, scope).result()


def run_interruptible(call: Callable[[], Any], stop: Callable[[], None], *,
                      in_place: bool = False) -> tuple[Any, bool]:
    """Run ``call()`` so that Ctrl-C (SIGINT) stops it promptly: returns ``(value, interrupted)``.

    In the main thread the call runs in a worker thread (the solvers used here release the GIL) while the main
    thread waits in Python, where a SIGINT handler can run: the first SIGINT calls ``stop()`` (the solver's own
    cancel: ``CpSolver.stop_search``, ``Highs.cancelSolve``, MathOpt's ``SolveInterrupter``) and the solve returns
    what it holds, which the backend reports with :attr:`Limit.INTERRUPTED`; a second SIGINT raises
    ``KeyboardInterrupt`` at once.

    ``in_place=True`` is for a call that runs Python code between short native calls (mckp's own loop, whose
    ``stop`` sets a flag it checks): it runs in the main thread itself, with the same handler (a signal handler
    runs between two bytecodes of the main thread), so it costs no thread (about 0.2 ms wall per call, many
    times a 64-GPU round's native work). A solve nested in it that is not in place (mckp's CP-SAT residual)
    still gets its worker thread, and the same first SIGINT stops both.

    A call made from that worker thread (a sub-solve: mckp's CP-SAT residual problem), or from inside an in-place
    call, registers its ``stop`` with the outer call for as long as it runs, so the same SIGINT stops it too, and it
    reports ``interrupted``; a stop that came before it started is passed on at once. Any other thread (no signal
    handler can be installed there) runs ``call()`` directly."""
    main = threading.current_thread() is threading.main_thread()
    scope: StopScope | None = getattr(_THREAD, "scope", None)
    if scope is not None:  # nested: in a worker thread, or in the main thread inside an in-place call
        scope.push(stop)
        try:
            value = _in_worker(call, scope) if main and not in_place else call()
        finally:
            scope.pop(stop)
        return value, scope.cancelled
    if not main:
        return call(), False
    old = signal.getsignal(signal.SIGINT)
    if old is None:  # a handler installed from C: leave it alone
        return call(), False
    hit = threading.Event()
    outer = StopScope()
    outer.push(stop)

    def on_sigint(signum: int, frame: Any) -> None:
        if hit.is_set():
            raise KeyboardInterrupt
        hit.set()
        outer.cancel()

    signal.signal(signal.SIGINT, on_sigint)
    try:
        if in_place:
            _THREAD.scope = outer
            try:
                value = call()
            finally:
                _THREAD.scope = None
        else:
            value = _in_worker(call, outer)
    finally:
        signal.signal(signal.SIGINT, old)
    return value, hit.is_set()


def interrupted_reason(reason: TerminationReason, has_solution: bool) -> tuple[TerminationReason, Limit | None]:
    """What an interrupted solve reports: OPTIMAL and the proofs (INFEASIBLE, UNBOUNDED) stand; anything else is
    FEASIBLE (with a solution) or NO_SOLUTION_FOUND, with :attr:`Limit.INTERRUPTED`."""
    if reason in (TerminationReason.OPTIMAL, TerminationReason.INFEASIBLE, TerminationReason.UNBOUNDED,
                  TerminationReason.INFEASIBLE_OR_UNBOUNDED):
        return reason, None
    return (TerminationReason.FEASIBLE if has_solution else TerminationReason.NO_SOLUTION_FOUND), Limit.INTERRUPTED


class Backend:
    """One solver adapter. Subclasses import their solver lazily, inside :meth:`solve`."""

    name: str = ""
    capabilities: Capabilities = Capabilities()
    #: Python modules that must be importable
    requires: tuple[str, ...] = ()
    #: the pip extra or package that provides the solver, for error messages
    install_hint: str = ""

    def available(self) -> tuple[bool, str]:
        """Whether the solver can be used here, and why not when it cannot (never imports the solver)."""
        for mod in self.requires:
            if importlib.util.find_spec(mod) is None:
                return False, f"the Python package {mod!r} is not installed ({self.install_hint})"
        return True, ""

    def version(self) -> str:
        return ""

    def warm_up(self) -> None:
        """Load the solver libraries now, so that first-call costs (imports, JIT, thread pools) stay out of timed
        solves; benchmarks call it before measuring."""
        for mod in self.requires:
            importlib.import_module(mod)

    def known_options(self) -> frozenset[str] | None:
        """The names of the solver options this backend accepts as ``schedopt.solve(..., name=value)``, checked
        before any solve; ``None``: the backend declares none and its options are not checked (third-party
        backends that do not override this)."""
        return None

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Raise :class:`~schedopt.errors.InputError` naming the first option this backend does not know, with the
        closest known names (all of them when there are few) and the escape hatch (``raw_options``)."""
        known = self.known_options()
        if known is None:
            return
        for name, value in options.items():
            if name in known:
                continue
            names = sorted(known)
            close = difflib.get_close_matches(name, names, n=5)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            listing = ", ".join(names) if len(names) <= 40 else f"{len(names)} options, e.g. {', '.join(close or names[:10])}"
            raise InputError(
                f"options.{name}", value,
                f"is not a {self.name} option{hint}; known: {listing}. Options schedopt does not list go to the "
                "solver unchecked through raw_options={...}",
            )

    def check_model(self, model: LinearModel) -> str | None:
        """Why this backend cannot solve ``model`` (``None`` when it can)."""
        arr = model.to_arrays()
        if arr.is_mip and not self.capabilities.mip:
            return "the model has integer variables and this backend solves LPs only"
        if not arr.is_mip and not self.capabilities.lp:
            return "the model is a pure LP and this backend solves integer models only"
        if self.capabilities.integer_only and not bool(arr.integrality.all()):
            return "every variable must be integer (this backend is a CP solver)"
        return None

    def solve(self, model: LinearModel, params: SolveParams) -> SolveResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def result(
        self,
        model: LinearModel,
        reason: TerminationReason,
        times: tuple[float, float, float],
        *,
        limit: Limit | None = None,
        detail: str = "",
        x: np.ndarray | None = None,
        bound: float | None = None,
        duals: np.ndarray | None = None,
        reduced_costs: np.ndarray | None = None,
        stats: dict[str, Any] | None = None,
    ) -> SolveResult:
        """The one place a backend's outcome becomes a :class:`SolveResult` (through :meth:`SolveResult.create`,
        which checks its invariants).

        ``times`` = (start, solver handed the model, solver returned). The objective is recomputed from ``x`` with
        the model's own coefficients; ``x`` is dropped unless the reason holds a solution. ``bound=None`` means the
        solver gave none: the objective when OPTIMAL, otherwise the trivial bound (``±inf``); an infeasible model's
        bound is always the trivial one of the other side. A solver that says FEASIBLE without handing over a
        solution is reported NO_SOLUTION_FOUND (what is true), and FEASIBLE / NO_SOLUTION_FOUND without a named
        limit gets :attr:`Limit.OTHER`.
        """
        has = x is not None and reason in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE)
        if reason is TerminationReason.FEASIBLE and not has:
            reason = TerminationReason.NO_SOLUTION_FOUND
        if reason is TerminationReason.OPTIMAL and not has:
            reason, detail = TerminationReason.ERROR, f"{detail} (optimal without a solution)".strip()
        if reason in (TerminationReason.FEASIBLE, TerminationReason.NO_SOLUTION_FOUND) and limit is None:
            limit = Limit.OTHER
        if has and bound is not None and not math.isnan(bound):
            arr = model.to_arrays()
            objv = float(arr.c @ np.asarray(x, dtype=float) + arr.constant)
            wrong = (objv - bound) if arr.maximize else (bound - objv)
            if wrong > bound_tolerance(objv):
                # the solver's bound contradicts its own solution: the solution is kept (the caller may check it),
                # the bound is not trusted, and nothing is called optimal on its strength
                detail = f"{detail} (solver bound {bound!r} contradicts the objective {objv!r}: not trusted)".strip()
                stats = {**(stats or {}), "untrusted_bound": float(bound)}
                bound = None
                if reason is TerminationReason.OPTIMAL:
                    reason, limit = TerminationReason.FEASIBLE, Limit.OTHER
        t0, t1, t2 = times
        return SolveResult.create(
            model,
            Termination(reason, limit, detail),
            backend=self.name,
            x=x if has else None,
            bound=bound,
            duals=duals,
            reduced_costs=reduced_costs,
            timings=Timings(handoff=t1 - t0, solve=t2 - t1),
            backend_version=self.version(),
            stats=stats,
        )
