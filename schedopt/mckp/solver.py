"""The mckp algorithm in named steps: :class:`MckpSolver` (aggregate -> dual -> repair -> local search -> kicks ->
core step -> residual closure), its :class:`MckpOptions` and its :class:`MckpOutcome`."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ..errors import InputError
from ..results import Limit, SolveResult, Termination, TerminationReason
from .aggregate import Aggregate, aggregate
from .dual import ColumnSet, DualResult, LagrangianDual
from .exact import SEARCH_MAX_NODES, ResidualClosure
from .heuristics import GreedyRepair, kick_search, local_search
from .structure import MckpStructure

__all__ = ["MckpOptions", "MckpOutcome", "MckpSolver"]

log = logging.getLogger("schedopt.mckp")

#: the dual stops within this fraction of ``mip_rel_gap`` (or ``dual_tolerance``, whichever is looser)
DUAL_GAP_FRACTION = 1e-5

#: the least delay (seconds) before the race backend starts (``MckpOptions.race_delay=None``)
RACE_DELAY_MIN = 0.05
#: the default ``MckpOptions.race_max_columns``: no race on larger models. HiGHS 1.12 had not reached its root LP
#: after 236-287 s at 123,406 columns (``benchmarks/scale_rounds.md``), and it checks a cancel only after its
#: presolve and symmetry detection (3.5 s at 60,000 columns), so there a race could only lose, and the solve would
#: wait minutes for the loser to stop (``formulations/mckp.md``, "What the race costs when it loses")
RACE_MAX_COLUMNS = 100_000

#: the default kick budget per aggregated column (seconds): 0.03 s from 3,000 columns up
KICK_SECONDS_PER_COLUMN = 1e-5

#: the local search's second start (:meth:`MckpSolver.second_start`) runs from this many aggregated columns up
SECOND_START_COLUMNS = 2000


@dataclass(frozen=True)
class MckpOptions:
    """The options of the mckp algorithm (``schedopt.solve(model, "mckp", exact=False, ...)``).

    ``kick_seconds=None`` means 0.03 s, or 0.005 s when ``mip_rel_gap < 1e-5`` (there the kicks can seldom give a
    proof and only shrink the residual problem), and at most ``KICK_SECONDS_PER_COLUMN`` per aggregated column
    (a small instance goes to its cheap residual solve instead). ``residual_backend=None``: CP-SAT when OR-Tools is installed,
    else HiGHS (HiGHS also for a residual of under 200 columns while CP-SAT is not loaded yet); ``residual_form``: ``"auto"`` (integer counts for CP-SAT, binaries per member otherwise),
    ``"integer"`` or ``"binary"``. ``race_backend``: when the exact mode (core and residual steps) is still running
    ``race_delay`` seconds after it began (None: as long as the solve has taken so far, at least
    ``RACE_DELAY_MIN``), this backend solves the whole model in a second thread, warm-started from the
    incumbent, and the first proof wins (the other solve is stopped): a bound on how much slower than that backend
    mckp can be on a structure hard for its exact mode (tied coefficients); None: no race. Needs the model
    (``MckpSolver(model=...)``; the backend passes it). ``search_nodes``: the node budget of the residual's own
    depth-first search (:meth:`~schedopt.mckp.ResidualClosure.search`, tried before the kicks on residuals of at most
    ``SEARCH_MAX_MEMBERS`` members; 0: never; with ``residual_table=False`` too, every residual goes to the
    sub-solver). ``dual_method``: how
    the prices are found, ``"auto"`` (one LP solve of the relaxation up to ``LP_DUAL_COLUMNS`` aggregated columns,
    Kelley's method above), ``"lp"`` or ``"kelley"``. ``lp_rounding``: the repair starts from the LP relaxation's
    optimal counts rounded down (the Lagrangian choice repaired only when that leaves a gap); False: from the
    Lagrangian choice alone. ``residual_table``: a residual with integer weights and at most
    ``TABLE_MAX_CELLS`` cells that the search leaves is solved by :meth:`~schedopt.mckp.ResidualClosure.table`
    (dynamic programming over the capacities) before any sub-solver."""

    exact: bool = True
    local_search: bool = True
    kick_seconds: float | None = None
    kicks: int = 40
    kick_size: int = 3
    residual_backend: str | None = None
    residual_form: str = "auto"
    max_dual_iterations: int = 500
    dual_tolerance: float = 1e-10
    core_columns: int = 2000
    race_backend: str | None = "highs"
    race_delay: float | None = None
    race_max_columns: int | None = RACE_MAX_COLUMNS
    search_nodes: int = SEARCH_MAX_NODES
    dual_method: str = "auto"
    lp_rounding: bool = True
    residual_table: bool = True

    @classmethod
    def known(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> MckpOptions:
        """Options checked by name and type: an unknown name raises :class:`InputError` listing the known ones.
        No options (every solve the simulator's Sia policy makes): the defaults, one shared frozen instance."""
        if not options and cls is MckpOptions:
            return _DEFAULT_OPTIONS
        known = cls.known()
        for name in options:
            if name not in known:
                raise InputError(f"options.{name}", options[name], f"is no mckp option; known: {', '.join(known)}")
        vals: dict[str, Any] = {}
        for name, v in options.items():
            if name in ("exact", "local_search", "lp_rounding", "residual_table"):
                if not isinstance(v, (bool, np.bool_)):
                    raise InputError(f"options.{name}", v, "must be True or False")
                vals[name] = bool(v)
            elif name in ("kicks", "kick_size", "max_dual_iterations", "core_columns", "search_nodes"):
                nonneg = name in ("kicks", "search_nodes")
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < (0 if nonneg else 1):
                    raise InputError(f"options.{name}", v, "must be a non-negative integer" if nonneg
                                     else "must be a positive integer")
                vals[name] = int(v)
            elif name == "race_max_columns":
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0):
                    raise InputError(f"options.{name}", v, "must be a non-negative integer or None")
                vals[name] = None if v is None else int(v)
            elif name in ("kick_seconds", "dual_tolerance", "race_delay"):
                if v is None and name in ("kick_seconds", "race_delay"):
                    vals[name] = None
                    continue
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                    raise InputError(f"options.{name}", v, "must be a finite non-negative number")
                vals[name] = float(v)
            elif name in ("residual_backend", "race_backend"):
                if v is not None and not isinstance(v, str):
                    raise InputError(f"options.{name}", v, "must be a backend name or None")
                vals[name] = v
            elif name == "dual_method":
                if v not in ("auto", "lp", "kelley"):
                    raise InputError(f"options.{name}", v, "must be 'auto', 'lp' or 'kelley'")
                vals[name] = v
            elif name == "residual_form":
                if v not in ("auto", "integer", "binary"):
                    raise InputError(f"options.{name}", v, "must be 'auto', 'integer' or 'binary'")
                vals[name] = v
        return cls(**vals)


#: the options of a solve that gives none (:meth:`MckpOptions.from_mapping` of an empty mapping; frozen, so shared)
_DEFAULT_OPTIONS = MckpOptions()


@dataclass(frozen=True)
class MckpOutcome:
    """How :meth:`MckpSolver.run` ended: the termination, the choice (one column of the structure or -1 per group;
    None without a solution), the bound in the model's sense, and the figures of every phase."""

    termination: Termination
    choice: np.ndarray | None
    bound: float
    stats: dict[str, Any] = field(default_factory=dict)


class MckpSolver:
    """The exact solver for one presolved structure ``st`` (from :func:`~schedopt.mckp.analyze`).

    Steps (each a method; :meth:`run` calls them in order and stops as soon as the gap is closed or time is up):
    :meth:`aggregate_groups`, :meth:`solve_dual`, :meth:`repair`, :meth:`local_search`, :meth:`kicks`,
    :meth:`core_step`, :meth:`residual_step`. ``sub_solve`` (``schedopt.solve``) solves the residual problems of
    the exact mode; without it the exact mode ends FEASIBLE with its bound."""

    def __init__(self, st: MckpStructure, *, mip_rel_gap: float | None = 1e-6, time_limit: float | None = None,
                 seed: int = 0, threads: int = 1, warm_start: np.ndarray | None = None,
                 options: MckpOptions | None = None, sub_solve: Callable[..., SolveResult] | None = None,
                 verbose: bool = False, t_start: float | None = None, model: Any = None) -> None:
        self.st = st
        self.model = model  # the LinearModel ``st`` was analysed from: the race backend solves it whole
        self.opts = options or MckpOptions()
        self.gap_tol = 1e-4 if mip_rel_gap is None else float(mip_rel_gap)
        self.seed = seed
        self.threads = threads
        self.warm_start = warm_start
        self.sub_solve = sub_solve
        self.verbose = verbose
        t0 = time.perf_counter() if t_start is None else t_start
        self.t_start = t0
        self.deadline = t0 + (math.inf if time_limit is None else float(time_limit))
        self.sign = 1.0 if st.maximize else -1.0
        self.stats: dict[str, Any] = dict(st.stats)
        self.phases: dict[str, float] = {"detect": st.stats.get("detect_seconds", 0.0)}
        self.stats["phase_seconds"] = self.phases
        # state, filled by the steps
        self.agg: Aggregate
        self.dual: DualResult
        self.repairer: GreedyRepair
        self.choice = np.full(st.G, -1, dtype=np.int64)
        self.UB = math.inf  # maximisation form
        self.LB = -math.inf
        self.delta = np.zeros(0)
        self.bestg = np.zeros(0)
        self.stopped = False  # set by stop(): end at the next check with the incumbent, Limit.INTERRUPTED
        self._dual_run: LagrangianDual | None = None
        self._second_start: np.ndarray | None = None
        self._race_run: _Racer | None = None

    # ---------------------------------------------------------------- helpers
    def time_left(self) -> float:
        return self.deadline - time.perf_counter()

    def _is_stopped(self) -> bool:
        return self.stopped

    def stop(self) -> None:
        """Ask a running :meth:`run` (in another thread) to stop: every step's clock check (the dual's iterations,
        the repair's improvement, the local searches between rounds) sees the time as up, and :meth:`run` ends
        with the incumbent, FEASIBLE or NO_SOLUTION_FOUND with :attr:`Limit.INTERRUPTED`. A residual sub-solve
        already running (CP-SAT, HiGHS) is stopped by the same Ctrl-C: ``run_interruptible`` passes it to every
        solve nested in the worker thread (its ``stop_search`` / ``cancelSolve``), which returns its incumbent and
        proven bound, reported INTERRUPTED. Safe to call from a signal handler."""
        self.stopped = True
        self.deadline = -math.inf
        if self._race_run is not None:
            self._race_run.cancel()
        if self._dual_run is not None:
            self._dual_run.deadline = -math.inf
        repairer = getattr(self, "repairer", None)
        if repairer is not None:
            repairer.deadline = -math.inf

    def _say(self, msg: str, *args: Any) -> None:
        log.log(logging.INFO if self.verbose else logging.DEBUG, msg, *args)

    def within(self, ub: float, lb: float) -> bool:
        """Whether the bound ``ub`` proves ``lb`` optimal within ``mip_rel_gap`` (maximisation form)."""
        return ub - lb <= max(self.gap_tol * max(abs(lb), 1e-10), 1e-9 * max(1.0, abs(lb)))

    def adopt(self, choice: np.ndarray) -> bool:
        """Take ``choice`` as the incumbent when it fits and is better; returns whether it was taken."""
        return self.st.fits(choice) and self._take(choice, self.st.value_of(choice))

    def _take(self, choice: np.ndarray, value: float) -> bool:
        """:meth:`adopt` of a choice known to fit, with its value ``st.value_of(choice)``."""
        if value > self.LB:
            self.choice, self.LB = choice, value
            return True
        return False

    def _end(self, reason: TerminationReason, limit: Limit | None, detail: str, bound: float,
             with_choice: bool = True) -> MckpOutcome:
        if self.stopped and reason in (TerminationReason.FEASIBLE, TerminationReason.NO_SOLUTION_FOUND):
            limit, detail = Limit.INTERRUPTED, f"interrupted ({detail})"
        self._say("mckp: %s (objective %.10g, bound %.10g)", detail, self.sign * self.LB, self.sign * bound)
        return MckpOutcome(Termination(reason, limit, detail), self.choice.copy() if with_choice else None,
                           self.sign * bound, self.stats)

    def _timed(self, phase: str, t0: float) -> None:
        self.phases[phase] = time.perf_counter() - t0

    # ---------------------------------------------------------------- steps
    def aggregate_groups(self) -> None:
        """Collapse identical groups into classes (the dual and the exact mode run on the classes)."""
        t = time.perf_counter()
        self.agg = aggregate(self.st)
        self.stats["classes"] = self.agg.classes
        self.stats["aggregated_columns"] = self.agg.st.n
        self._timed("aggregate", t)

    def solve_dual(self) -> None:
        """Minimise the Lagrangian function on the classes: the bound ``UB`` and the prices."""
        t = time.perf_counter()
        # any prices give a valid bound and a valid fixing: the dual need not be closer than a small fraction of
        # the MIP gap (Kelley's tail at 1e-10 took 500 iterations, 0.1 s, on a 64-GPU Sia instance)
        tol = max(self.opts.dual_tolerance, DUAL_GAP_FRACTION * self.gap_tol)
        d = LagrangianDual(self.agg.st, deadline=self.deadline, seed=self.seed,
                           tolerance=tol, max_iterations=self.opts.max_dual_iterations, method=self.opts.dual_method)
        self._dual_run = d
        if self.stopped:
            d.deadline = -math.inf
        self.dual = d.solve()
        self._dual_run = None
        self.dual_pool = d.pool
        self.UB = self.dual.best.L + self.st.const
        self._timed("dual", t)
        self.stats.update({
            "dual_iterations": self.dual.iterations, "oracle_columns": d.oracle_columns,
            "sample_iterations": d.sample_iterations, "pool_columns": int(d.pool.idx.size), "dual_boxes": d.boxes,
            "dual_method": d.used,
            "prices": dict(zip(self.st.knap_labels, self.dual.lam.tolist())), "lagrangian_bound": self.sign * self.UB,
        })
        bestg = np.maximum(self.dual.gmax, 0.0)  # per class
        self.bestg = bestg
        # reduced-cost loss of each aggregated column against its class's best (>= 0)
        self.delta = bestg[self.agg.st.group] - self.dual.rc
        self._say("mckp: dual bound %.10g after %d oracle calls", self.sign * self.UB, self.dual.iterations)

    def repair(self) -> None:
        """Make the Lagrangian choice feasible on the original groups and improve it greedily; a feasible warm
        start, improved the same way, replaces it when better."""
        t = time.perf_counter()
        st, agg, ast = self.st, self.agg, self.agg.st
        if self.dual_pool.idx.size == ast.n:
            pool = ColumnSet(st)
        else:
            inpool = np.zeros(ast.n, dtype=bool)
            inpool[self.dual_pool.idx] = True
            pool = ColumnSet(st, inpool[agg.col_map].nonzero()[0])
        self.repairer = GreedyRepair(st, pool, self.deadline)
        if self.stopped:
            self.repairer.deadline = -math.inf
        self.choice = np.full(st.G, -1, dtype=np.int64)
        self.LB = st.value_of(self.choice)
        if self.dual.y_lp is not None and self.opts.lp_rounding:
            # the LP optimum rounded down (a basic solution splits at most K classes' counts; W >= 0, so rounding
            # down keeps every row), improved greedily: usually much closer to the bound than the Lagrangian
            # choice repaired (a 1,024-GPU preset instance: 264.69 = the bound against 268.5, optimum 264.69)
            ch = self._lp_rounded(self.dual.y_lp)
            if ch is not None:
                self.adopt(self.repairer.improve(ch))
                self.stats["lp_rounding_objective"] = self.sign * self.LB
        if not self.within(self.UB, self.LB):
            ch = self.repairer.repair(agg.expand(self.dual.best.choice), self.dual.lam)
            value = st.value_of(ch)
            self.stats["lagrangian_repair_objective"] = self.sign * value
            if st.fits(ch) and not self._take(ch, value):
                self._second_start = ch  # the local search may reach further from it (see second_start)
        if self.warm_start is not None:
            ch = self._warm_choice(self.warm_start)
            if ch is not None:
                ch = self.repairer.improve(ch)
                if st.value_of(ch) > self.LB:
                    self.choice, self.LB = ch, st.value_of(ch)
        self._timed("repair", t)
        self.stats["repair_objective"] = self.sign * self.LB
        self._say("mckp: repaired incumbent %.10g", self.sign * self.LB)

    def _lp_rounded(self, y_lp: np.ndarray) -> np.ndarray | None:
        """The aggregated LP counts rounded down, as a choice of the original groups (None if it does not fit)."""
        ast = self.agg.st
        y = np.floor(y_lp + 1e-7).astype(np.int64)
        if ast.mult is not None and ast.n and np.any(np.add.reduceat(y, ast.starts) > ast.mult):
            return None
        ch = self.agg.disaggregate(y)
        return ch if self.st.fits(ch) else None

    def _warm_choice(self, ws: np.ndarray) -> np.ndarray | None:
        """The group choice of a full 0/1 warm start, or None when it is not a feasible choice of the structure."""
        st = self.st
        ws = np.asarray(ws, dtype=float)
        if ws.shape != (st.n_cols,) or not np.all(np.isfinite(ws)):
            return None
        # columns the presolve removed (forced ones, ones that never help) are left out: dropping them never hurts
        on = (ws > 0.5).nonzero()[0]
        pos = np.full(st.n_cols, -1, dtype=np.int64)
        pos[st.cols] = np.arange(st.n)
        p = pos[on]
        p = p[p >= 0]
        if np.unique(st.group[p]).size != p.size:
            return None  # two columns of one group
        ch = np.full(st.G, -1, dtype=np.int64)
        ch[st.group[p]] = p
        return ch if st.fits(ch) else None

    def local_search(self) -> None:
        """Exchanges of up to three bundles of moves on the aggregated counts at the final prices (skipped when the
        repaired incumbent is already within ``mip_rel_gap`` of the bound: the run stops as soon as the gap is
        closed; a 1,024-GPU preset instance within 3e-7 after the repair spent 0.1 s CPU here)."""
        agg, ast = self.agg, self.agg.st
        if not (ast.n and self.UB - self.LB > 0 and self.opts.local_search) or self.within(self.UB, self.LB):
            return
        gam = self.UB - self.LB + 1e-9 * max(1.0, abs(self.UB))
        target = self.UB - self.st.const - self.gap_tol * max(abs(self.UB), 1e-10)
        y1, nmoves = local_search(ast, agg.counts(self.choice), self.dual.lam, self.delta, self.bestg, gam,
                                  self.deadline, stop=self._is_stopped, target=target, dense_pad=agg.dense_pad)
        self.stats["local_search_moves"] = nmoves
        if nmoves:
            self.adopt(agg.disaggregate(y1))

    def second_start(self) -> None:
        """When the gap is still open after the local search and the kicks from the best start (the LP's rounded
        counts), the same from the Lagrangian choice repaired, when that was the worse start: they end in different
        local optima, and one more local search costs far less than the residual MIP that follows otherwise (a
        2,048-GPU exact instance, seed 2: 235 -> 56 ms CPU). Only from ``SECOND_START_COLUMNS`` aggregated
        columns up: below, the residual MIP is cheap (a 256-GPU preset instance: 12 ms) and the second start cost
        more than it saved. The better end is kept."""
        alt = self._second_start
        self._second_start = None
        if alt is None or self.within(self.UB, self.LB) or self.stopped or self.time_left() <= 0 or \
                self.agg.st.n < SECOND_START_COLUMNS:
            return
        kept, kept_lb = self.choice, self.LB
        self.choice, self.LB = alt, self.st.value_of(alt)
        self.local_search()
        self.kicks()
        self.stats["second_start_objective"] = self.sign * self.LB
        if self.LB < kept_lb:
            self.choice, self.LB = kept, kept_lb

    def kicks(self) -> None:
        """A few ms of iterated local search with random kicks, when the gap is still open."""
        agg, ast = self.agg, self.agg.st
        if not (ast.n and self.UB - self.LB > 0 and self.opts.local_search):
            return
        kb = self.opts.kick_seconds
        if kb is None:
            # the default budget also scales with the aggregated columns (KICK_SECONDS_PER_COLUMN each): on a small
            # instance a residual solve of a few ms closes the gap that 30 ms of kicks seldom close (saturn/1 on
            # 64 GPUs, ~100 columns: 5 improvements in 226 kicked rounds, 7 of the run's 17 s CPU)
            kb = min(0.03 if self.gap_tol >= 1e-5 else 0.005, KICK_SECONDS_PER_COLUMN * ast.n)
        self.stats["kick_budget_seconds"] = kb
        if kb <= 0 or self.within(self.UB, self.LB):
            return
        gam = self.UB - self.LB + 1e-9 * max(1.0, abs(self.UB))
        target = self.UB - self.st.const - self.gap_tol * max(abs(self.UB), 1e-10)
        y2, wins = kick_search(ast, agg.counts(self.choice), self.dual.lam, self.delta, self.bestg, gam,
                               min(self.deadline, time.perf_counter() + kb), self.seed, self.opts.kicks,
                               self.opts.kick_size, target, stop=self._is_stopped)
        self.stats["kick_improvements"] = wins
        if wins:
            self.adopt(agg.disaggregate(y2))

    def _closure(self) -> ResidualClosure:
        assert self.sub_solve is not None
        c = ResidualClosure(self.agg, self.delta, self.bestg, self.sub_solve, backend=self.opts.residual_backend,
                            form=self.opts.residual_form, gap_tol=self.gap_tol, threads=self.threads, seed=self.seed,
                            lam=self.dual.lam, search_nodes=self.opts.search_nodes, table=self.opts.residual_table)
        return c

    def _eps(self) -> float:
        return 1e-9 * max(1.0, abs(self.UB))

    def _restricted(self, closure: ResidualClosure, tau: float, time_limit: float | None,
                    search: bool = False) -> Any:
        gam = max(self.UB - self.LB, 0.0) + self._eps()
        rs = closure.restricted(self.agg.counts(self.choice), gam, tau, time_limit, search=search)
        if not search:
            self.stats["residual_backend"] = closure.backend
            self.stats["residual_form"] = closure.form
        if rs.counts is not None:
            self.adopt(self.agg.disaggregate(rs.counts))
        return rs

    def core_step(self, closure: ResidualClosure) -> None:
        """When many options are close to their class's best: solve among the ``core_columns`` closest first (a
        large-neighbourhood search around the incumbent); a better incumbent shrinks the residual problem."""
        core_max = self.opts.core_columns
        gap_abs = max(self.UB - self.LB, 0.0)
        if int(np.count_nonzero(self.delta <= gap_abs + self._eps())) <= core_max:
            return
        t = time.perf_counter()
        tau = float(np.partition(self.delta, core_max - 1)[core_max - 1]) + self._eps()
        left = self.time_left()
        rs = self._restricted(closure, tau, None if math.isinf(left) else max(left, 0.0) / 2)
        self._timed("core", t)
        self.stats["core_columns"] = rs.columns
        self.stats["core_objective"] = self.sign * self.LB
        if rs.result is not None:
            self.stats["core_status"] = str(rs.result.termination)

    def search_step(self, closure: ResidualClosure) -> MckpOutcome | None:
        """Reduced-cost fixing at the gap, then the residual problem by :meth:`ResidualClosure.search` when it is
        small (at most ``SEARCH_MAX_MEMBERS`` members): a proof in well under a millisecond on the simulator's
        rounds, where the sub-solver costs a model build and a MIP solve (about 7 ms). None when the search does
        not run or gives up (``SEARCH_MAX_NODES``): the exact steps follow."""
        t = time.perf_counter()
        gap_abs = max(self.UB - self.LB, 0.0)
        rs = self._restricted(closure, gap_abs + self._eps(), None, search=True)
        self._timed("search", t)
        if math.isnan(rs.bound):
            return None
        self.stats["columns_fixed"] = rs.fixed
        self.stats["residual_columns"] = rs.columns
        self.stats["residual_backend"] = rs.method
        self.stats["search_nodes" if rs.method == "search" else "table_cells"] = rs.nodes
        bound = min(self.UB, max(self.LB, rs.bound))
        if self.within(bound, self.LB):
            return self._end(TerminationReason.OPTIMAL, None, f"residual problem solved by the {rs.method}",
                             max(bound, self.LB))
        return None

    def residual_step(self, closure: ResidualClosure) -> MckpOutcome:
        """Reduced-cost fixing at the gap, then the residual problem: a proof or the best bound found."""
        t = time.perf_counter()
        left = self.time_left()
        gap_abs = max(self.UB - self.LB, 0.0)
        rs = self._restricted(closure, gap_abs + self._eps(), None if math.isinf(left) else max(left, 0.0))
        self._timed("residual", t)
        self.stats["columns_fixed"] = rs.fixed
        self.stats["residual_columns"] = rs.columns
        r = rs.result
        T = TerminationReason
        if r is None:
            return self._end(T.OPTIMAL, None, "reduced-cost fixing left nothing to improve", self.LB)
        self.stats["residual_status"] = str(r.termination)
        self.stats["residual_stats"] = dict(r.stats)
        if r.termination.reason is T.INFEASIBLE:
            # no choice among the options left improves on the incumbent: it is optimal
            return self._end(T.OPTIMAL, None, "the residual problem has no improving solution", self.LB)
        # every solution better than the incumbent at the time of the fixing lies in the residual problem
        res_bound = r.bound if not math.isnan(r.bound) else math.inf
        bound = min(self.UB, max(self.LB, res_bound))
        if self.within(bound, self.LB):
            return self._end(T.OPTIMAL, None, "residual problem solved", max(bound, self.LB))
        # the residual solver's own OPTIMAL is not trusted on its word: without the bound it is not a proof
        limit = r.termination.limit or Limit.OTHER
        return self._end(T.FEASIBLE, limit, f"residual problem: {r.termination}", bound)

    # ---------------------------------------------------------------- the whole run
    def run(self) -> MckpOutcome:
        """Every step in order; OPTIMAL only with a proof (bound within ``mip_rel_gap``), FEASIBLE with the
        limit hit otherwise (``Limit.HEURISTIC`` when ``exact=False`` stops before the exact mode)."""
        T = TerminationReason
        st = self.st
        if st.infeasible:
            self.stats["phase_seconds"] = self.phases
            return MckpOutcome(Termination(T.INFEASIBLE, None, st.infeasible), None, -self.sign * math.inf,
                               self.stats)
        self.aggregate_groups()
        self.solve_dual()
        self.repair()
        t = time.perf_counter()
        self.local_search()
        quick = None
        if (self.opts.exact and self.sub_solve is not None and (self.opts.search_nodes > 0 or self.opts.residual_table)
                and not self.stopped
                and not self.within(self.UB, self.LB) and self.time_left() > 0):
            # a small residual is proved by the search at once: the kicks would only spend their budget first
            self._timed("local_search", t)
            quick = self.search_step(self._closure())
            t = time.perf_counter() - self.phases["local_search"]
        if quick is None:
            self.kicks()
            self.second_start()
        self._timed("local_search", t)
        self.stats["local_search_objective"] = self.sign * self.LB
        self.stats["gap_after_repair"] = max(self.UB - self.LB, 0.0) / max(abs(self.LB), 1e-10)
        if quick is not None:
            return quick
        if self.within(self.UB, self.LB):
            return self._end(T.OPTIMAL, None, "Lagrangian bound met by the repaired and locally improved solution",
                             max(self.UB, self.LB))
        if self.stopped:
            if not st.fits(self.choice):
                return self._end(T.NO_SOLUTION_FOUND, Limit.INTERRUPTED, "stopped before a feasible choice",
                                 self.UB, with_choice=False)
            return self._end(T.FEASIBLE, Limit.INTERRUPTED, "stopped after the repair", self.UB)
        if self.time_left() <= 0:
            return self._end(T.FEASIBLE, Limit.TIME, "time limit after the repair", self.UB)
        if not self.opts.exact:
            return self._end(T.FEASIBLE, Limit.HEURISTIC, "exact=False: repaired solution with its bound", self.UB)
        if self.sub_solve is None:
            return self._end(T.FEASIBLE, Limit.OTHER, "no sub-solver given for the exact mode: repaired solution "
                             "with its bound", self.UB)
        closure = self._closure()
        racer = self._racer()
        if racer is None:
            return self.exact_steps(closure)
        return self._race(closure, racer)

    # ---------------------------------------------------------------- the race
    def _racer(self) -> _Racer | None:
        rb = self.opts.race_backend
        if rb is None or self.model is None or self.sub_solve is None or not self.st.fits(self.choice):
            return None
        cap = self.opts.race_max_columns
        if cap is not None and self.model.num_cols > cap:
            self.stats["race_skipped"] = f"{self.model.num_cols} columns > race_max_columns = {cap}"
            return None
        delay = self.opts.race_delay
        if delay is None:
            delay = max(RACE_DELAY_MIN, time.perf_counter() - self.t_start)
        left = self.time_left()
        if left <= delay:
            return None
        ws = self.st.full_solution(self.choice)
        return _Racer(self.sub_solve, self.model, rb, delay, dict(
            time_limit=None if math.isinf(left) else max(left - delay, 1e-3), mip_rel_gap=self.gap_tol / 2,
            threads=self.threads, seed=self.seed, warm_start=ws))

    def _race(self, closure: ResidualClosure, racer: _Racer) -> MckpOutcome:
        """The exact steps here, the race backend on the whole model in its thread; the first proof wins."""
        from ..interrupt import nested_stop_scope

        racer.check = lambda x: self._warm_choice(x) is not None
        self._race_run = racer
        if self.stopped:
            racer.cancel()
        with nested_stop_scope() as scope:

            def on_proof() -> None:  # a proof from the racer stops the exact steps' sub-solves, and their clock is
                self.deadline = -math.inf  # up so none starts (CP-SAT ignores a stop asked before its solve)
                scope.cancel()

            racer.on_proof = on_proof
            racer.start()
            out = self.exact_steps(closure)
        won = racer.won
        racer.cancel()
        racer.join()
        self.stats["race_backend"] = racer.backend
        self.stats["race_started"] = racer.started
        if not won:
            if racer.result is not None:
                self.stats["race_status"] = str(racer.result.termination)
            return out
        r = racer.result
        assert r is not None and r.x is not None
        ch = self._warm_choice(r.x)
        assert ch is not None  # racer.won checked it
        self.adopt(ch)
        bound = min(self.UB, self.sign * r.bound) if not math.isnan(r.bound) else self.UB
        self.stats["race_status"] = str(r.termination)
        self.stats["fallback"] = f"{racer.backend} on the whole model"
        if self.within(bound, self.LB):
            return self._end(TerminationReason.OPTIMAL, None, f"{racer.backend} on the whole model won the race",
                             max(bound, self.LB))
        return out

    def exact_steps(self, closure: ResidualClosure) -> MckpOutcome:
        """The core step (when many options are close) and the residual step: the exact mode's end."""
        T = TerminationReason
        self.core_step(closure)
        if "core" in self.phases:
            if self.within(self.UB, self.LB):
                return self._end(T.OPTIMAL, None, "Lagrangian bound met by the core solution", max(self.UB, self.LB))
            if self.time_left() <= 0:
                return self._end(T.FEASIBLE, Limit.TIME, "time limit after the core step", self.UB)
        elif self.stopped:
            return self._end(T.FEASIBLE, Limit.INTERRUPTED, "stopped before the residual step", self.UB)
        return self.residual_step(closure)


class _Racer:
    """The race backend's solve of the whole model in a daemon thread, started after ``delay`` seconds unless
    cancelled first; ``won`` once it holds a proof (OPTIMAL, a solution that maps onto the structure's choice)."""

    def __init__(self, sub_solve: Callable[..., SolveResult], model: Any, backend: str, delay: float,
                 params: dict[str, Any]) -> None:
        from ..interrupt import StopScope

        self.sub_solve, self.model, self.backend, self.delay, self.params = sub_solve, model, backend, delay, params
        self.scope = StopScope()
        self._cancelled = threading.Event()
        self.result: SolveResult | None = None
        self.error: BaseException | None = None
        self.won = False
        self.started = False
        self.on_proof: Callable[[], None] | None = None
        self.check: Callable[[np.ndarray], bool] = lambda x: True
        self._task: Any = None

    def start(self) -> None:
        from ..interrupt import submit

        self._task = submit(self._work, self.scope)  # a kept worker thread: no thread start per race

    def _work(self) -> None:
        if self._cancelled.wait(self.delay):
            return
        self.started = True
        try:
            r = self.sub_solve(self.model, self.backend, **self.params)
        except BaseException as exc:  # a failing race backend never fails the solve: mckp's own answer stands
            self.error = exc
            return
        self.result = r
        if r.termination.reason is TerminationReason.OPTIMAL and r.x is not None and self.check(r.x):
            self.won = True
            if self.on_proof is not None:
                self.on_proof()

    def cancel(self) -> None:
        self._cancelled.set()
        self.scope.cancel()

    def join(self) -> None:
        if self._task is not None:
            self._task.result()
