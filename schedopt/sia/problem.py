"""``SiaProblem``: one Sia round (validated inputs), and ``SiaSolution``, its decoded :class:`~schedopt.problem.Answer`.

The steps are separate named pieces, each in its own module:

* validation (:mod:`schedopt.sia.validate`) -- in the constructor, before anything is evaluated;
* goodput evaluation (:mod:`schedopt.sia.evaluate`) and pruning (:mod:`schedopt.sia.pairs`) -- the
  :class:`~schedopt.sia.pairs.PairTable` of valid (job, configuration) pairs, their goodput and utility;
* building (:mod:`schedopt.sia.build`) -- the :class:`~schedopt.problem.Formulation` whose typed inverse map is the
  pair table;
* solving through :func:`schedopt.solve` (the only dispatcher; models without columns are decided there) and
  decoding into :class:`SiaSolution`.

Every knob of the published code is a field of :class:`~schedopt.sia.SiaSettings` (default: the paper's model).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InfeasibleError, InputError, SolveFailedError
from ..model import LinearModel
from ..problem import Answer, Formulation, SolveOptions, Violation, to_jsonable
from ..results import SolveResult, Termination
from . import build as _build
from . import direct as _direct
from .configs import ConfigTable, generate_configs
from .evaluate import goodput_of_pairs
from .pairs import JobArrays, PairTable, job_arrays, prune, restart_factors, valid_sub
from .settings import SiaSettings
from .spec import Cluster, Config, Job, JobId
from .validate import check_available, check_goodput_input, check_jobs, standard_width

if TYPE_CHECKING:
    import scipy.sparse as sp

    from ..infeasibility import InfeasibilityReport
    from .placement import Placement

__all__ = ["GoodputInput", "PairTable", "SiaProblem", "SiaSolution", "default_backend_for"]

#: a (jobs x configs) array, a callable (job, config) -> goodput, or a mapping job id -> goodput model
GoodputInput = Any


#: the settings of a problem given none: the paper's exact model (a frozen value with no mutable field, built once
#: rather than validated again each round)
_DEFAULT_SETTINGS = SiaSettings()


def default_backend_for(formulation: Formulation[Any]) -> str:
    """The backend schedopt picks for a formulation: :func:`schedopt.default_backend` (the one place that decides;
    ``mckp`` for the MCKP structure when it is installed)."""
    from ..solve import default_backend

    return default_backend(formulation)


class SiaProblem:
    """One Sia scheduling round: ``cluster``, ``jobs`` and their ``goodput``.

    ``goodput``: a (jobs x configs) array over :attr:`configs` (or over the uncapped standard table; entries of
    invalid pairs are ignored, 0 means "cannot run there"), a callable ``(job, config) -> goodput`` (called once
    per valid pair: use arrays or models for large instances), or a mapping ``job id -> model`` where a model has
    ``goodput(gpu_type, nodes, replicas)`` returning an object with a ``.goodput`` array (e.g.
    :class:`schedopt.goodput.JobGoodputModel`); strong-scaling and rigid jobs use the model's
    ``throughput(gpu_type, nodes, replicas, batch)`` at ``job.batch_size`` (default the model's ``init_batch``)
    when it has one. ``p`` (!= 0) is the fairness power, ``lam`` the no-allocation penalty, ``available`` the free
    GPUs per type (default: all), ``settings`` the knobs of the published code (:class:`SiaSettings`; default the
    paper's exact model; :func:`~schedopt.sia.published_settings` sets them all). ``build_cache``: a
    :class:`~schedopt.sia.build.SiaBuildCache` kept across rounds, so the model is built incrementally (the same
    model; a simulator's policy passes one).
    """

    def __init__(
        self,
        cluster: Cluster,
        jobs: Sequence[Job],
        goodput: GoodputInput,
        p: float = -0.5,
        lam: float = 1.1,
        max_gpus_per_job: int | None = None,
        available: Mapping[str, int] | Sequence[int] | None = None,
        *,
        settings: SiaSettings | None = None,
        build_cache: _build.SiaBuildCache | None = None,
    ) -> None:
        if not isinstance(cluster, Cluster):
            raise InputError("cluster", type(cluster).__name__, "must be a Cluster")
        self.cluster = cluster
        if isinstance(jobs, (str, bytes)) or not isinstance(jobs, Sequence):
            raise InputError("jobs", type(jobs).__name__, "must be a sequence of Job")
        self.jobs: tuple[Job, ...] = tuple(jobs)
        if not isinstance(p, (int, float, np.integer, np.floating)) or isinstance(p, bool) or not math.isfinite(p):
            raise InputError("p", p, "must be a finite number")
        if p == 0:
            raise InputError("p", p, "p = 0 is not supported (G^0 = 1 makes every configuration equal); use p > 0 or p < 0")
        if not isinstance(lam, (int, float, np.integer, np.floating)) or isinstance(lam, bool) or not (
            math.isfinite(lam) and lam >= 0
        ):
            raise InputError("lam", lam, "must be a finite number >= 0")
        if settings is None:
            settings = _DEFAULT_SETTINGS
        if not isinstance(settings, SiaSettings):
            raise InputError("settings", type(settings).__name__, "must be a SiaSettings (or None)")
        if max_gpus_per_job is not None and settings.max_gpus_per_job is not None and (
            max_gpus_per_job != settings.max_gpus_per_job
        ):
            raise InputError("max_gpus_per_job", max_gpus_per_job,
                             f"differs from settings.max_gpus_per_job={settings.max_gpus_per_job} (give it once)")
        if build_cache is not None and not isinstance(build_cache, _build.SiaBuildCache):
            raise InputError("build_cache", type(build_cache).__name__, "must be a SiaBuildCache (or None)")
        self.build_cache = build_cache
        self.p = float(p)
        self.lam = float(lam)
        self.settings = settings
        cap = max_gpus_per_job if max_gpus_per_job is not None else settings.max_gpus_per_job
        rigid_counts = {j.rigid_gpus for j in self.jobs if isinstance(j, Job) and j.kind == "rigid"} \
            if settings.rigid_any_count else set()
        self.configs: ConfigTable = generate_configs(
            cluster, cap, max_nodes=settings.max_physical_nodes, rigid_counts=[g for g in rigid_counts if g]
        )
        self.max_gpus_per_job = None if cap is None else int(cap)
        self.available = check_available(cluster, available)
        self.goodput = goodput
        self._index, self._current_index = check_jobs(cluster, self.configs, self.jobs, settings, self.max_gpus_per_job)
        check_goodput_input(cluster, self.configs, self.jobs, goodput, standard_width(cluster))

    @property
    def job_ids(self) -> list[JobId]:
        return [j.id for j in self.jobs]

    def job_index(self, job_id: JobId) -> int:
        try:
            return self._index[job_id]
        except KeyError:
            raise InputError("job_id", job_id, "names no job of this problem") from None

    # ------------------------------------------------------------------ pruning
    @cached_property
    def job_arrays(self) -> JobArrays:
        """The jobs' fields as arrays (one pass over the Python objects)."""
        return job_arrays(self.jobs, self.cluster.type_names, self._current_index)

    def restart_factors(self) -> np.ndarray:
        """``r_i = max(T_i - N_i S_i, 0) / (T_i + S_i)``, 1 while young (vectorised over jobs; the settings decide
        whether a rigid job's youth is its age or its attained GPU-seconds)."""
        return restart_factors(self.job_arrays, self.settings)

    def valid_mask(self) -> np.ndarray:
        """(jobs x configs) boolean from the spec rules alone (GPU counts, scale unit, growth, types, rigid),
        computed by broadcasting; forced (non-preemptible) current configurations are always valid."""
        cols, sub = valid_sub(self.job_arrays, self.configs)
        out = np.zeros((len(self.jobs), len(self.configs)), dtype=bool)
        out[:, cols] = sub
        return out

    def goodput_of_pairs(self, jj: np.ndarray, cc: np.ndarray) -> np.ndarray:
        """Raw goodput of the pairs (``jobs[jj[k]]``, ``configs[cc[k]]``) from the goodput input."""
        return goodput_of_pairs(self.cluster, self.configs, self.jobs, self.goodput, jj, cc)

    def valid_pairs(self) -> PairTable:
        """The model's columns: valid (job, config) pairs with goodput > 0 and their utilities (cached)."""
        return self._pairs

    @cached_property
    def _pairs(self) -> PairTable:
        memo = self.build_cache.valid if self.build_cache is not None else None
        return prune(self.jobs, self.configs, self.job_arrays, self.settings, self.goodput_of_pairs, memo)

    # ------------------------------------------------------------------ building
    def objective_coefficients(self) -> tuple[np.ndarray, float, str]:
        """(coefficient per column, constant, sense) of the objective before the change penalty."""
        return _build.objective_coefficients(self)

    def virtual_rows(self) -> tuple[sp.csr_matrix, np.ndarray, list[str]]:
        """The ``virtual_node_capacity`` rows over the columns (see :func:`schedopt.sia.build.virtual_rows`)."""
        return _build.virtual_rows(self)

    def formulation(self) -> Formulation[PairTable]:
        """The built model, its typed inverse map (the pair table) and its structure tag (cached: build once)."""
        return self._formulation

    @cached_property
    def _formulation(self) -> Formulation[PairTable]:
        # the model's array form straight from the pair table; the named model is built when first asked for
        return _direct.formulation(self, self.build_cache)

    def build(self) -> LinearModel:
        """The configuration ILP (a fresh build; :meth:`formulation` gives it with its inverse map).

        Examples
        --------
        >>> import schedopt
        >>> from schedopt import sia
        >>> problem = sia.generate_instance(64, seed=0).problem()
        >>> model = problem.build()
        >>> type(model).__name__, list(model.blocks)
        ('LinearModel', ['x'])
        >>> res = schedopt.solve(model, backend="highs")
        >>> res.termination.reason.value, round(res.objective, 4)
        ('optimal', 15.7494)
        """
        return _build.build_formulation(self).model

    # ------------------------------------------------------------------ forced part
    def check_forced(self) -> None:
        """Raise :class:`InfeasibleError` (before any solve) when the forced configurations alone exceed the free
        GPUs of a type; the message names the type and the jobs."""
        forced = [j for j in self.jobs if not j.preemptible and j.current is not None]
        if not forced:
            return
        use: dict[str, list[Job]] = {}
        for j in forced:
            assert j.current is not None
            use.setdefault(j.current.gpu_type, []).append(j)
        problems = []
        for t, js in use.items():
            need = sum(j.current.n_gpus for j in js if j.current is not None)
            have = int(self.available[self.cluster.type_index(t)])
            if need > have:
                problems.append(
                    f"gpu_capacity[{t}]: non-preemptible jobs {', '.join(str(j.id) for j in js)} need {need} {t} GPUs "
                    f"but {have} are available"
                )
        if problems:
            raise InfeasibleError(
                "the forced configurations (forced_config) alone are infeasible: " + "; ".join(problems),
                explanation=problems,
            )

    # ------------------------------------------------------------------ solve
    def solve(self, backend: str | None = None, *, place: bool = False, previous: Placement | None = None,
              options: SolveOptions | None = None, **params: Any) -> SiaSolution:
        """Build and solve (``backend=None``: ``options.backend``, else :func:`schedopt.default_backend` of the
        formulation, named in ``solution.backend``). The solve parameters come as ``options`` (a typed
        :class:`~schedopt.problem.SolveOptions`) or as keywords ``params`` for :func:`schedopt.solve`
        (``time_limit``, ``mip_rel_gap``, ...), not both.
        Raises :class:`InfeasibleError` before solving when the forced jobs alone exceed a type's GPUs. A
        time-limited solve returns the incumbent with ``solution.status`` FEASIBLE (or raises
        :class:`~schedopt.errors.NoSolutionError` on ``.allocation`` when there is none)."""
        from ..solve import solve

        self.check_forced()
        form = self.formulation()
        if isinstance(form.model, _direct.DirectModel):
            if backend is None:
                backend = options.backend if options is not None and options.backend is not None \
                    else default_backend_for(form)
            if backend == "mckp":
                _direct.prepare(form.model)  # the mckp backend takes the structure built from the pair table
        res = solve(form, backend, options=options, **params)
        sol = SiaSolution.decode(self, form, res)
        if place and res.has_solution:
            sol.place(previous)
        return sol

    def __repr__(self) -> str:
        return (f"SiaProblem({len(self.jobs)} jobs, {self.cluster.num_gpus} GPUs in {len(self.cluster.type_names)} types, "
                f"{len(self.configs)} configs, p={self.p}, lam={self.lam}"
                + ("" if self.settings.is_exact else f", settings={self.settings}") + ")")


@dataclass(kw_only=True, eq=False)
class SiaSolution(Answer):
    """A solved round (an :class:`~schedopt.problem.Answer`). ``allocation`` (job id -> Config or None) raises
    :class:`~schedopt.errors.NoSolutionError` when the solve holds no solution; with a time limit it is the
    incumbent and ``status`` says FEASIBLE. ``placement`` is set by :meth:`place` (or ``solve(place=True)``).

    Build it with :meth:`decode`; ``SiaSolution(problem=..., result=..., backend=...)`` (the earlier form) still
    works and reads the termination, objective, bound and timings from ``result``."""

    problem: SiaProblem
    result: SolveResult | None = None
    formulation: Formulation[PairTable] | None = None
    model: LinearModel | None = None
    placement: Placement | None = None
    termination: Termination = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.result is None:
            raise InputError("result", None, "a SiaSolution needs the SolveResult it decodes")
        if self.formulation is None:
            self.formulation = self.problem.formulation()
        if self.model is None:
            self.model = self.result.model if self.result.model is not None else self.formulation.model
        if self.termination is None:
            self.termination = self.result.termination
        if self.result.has_solution:
            self.objective_value = self.result.objective
        self.bound = self.result.bound
        self.timings = self.result.timings
        if not self.backend:
            self.backend = self.result.backend
        if not self.method:
            self.method = "sia"

    @classmethod
    def decode(cls, problem: SiaProblem, formulation: Formulation[PairTable], result: SolveResult) -> SiaSolution:
        """The answer of ``result`` (a solve of ``formulation``) for ``problem``."""
        return cls(problem=problem, formulation=formulation, model=formulation.model, result=result,
                   termination=result.termination, backend=result.backend, method="sia")

    @cached_property
    def chosen_columns(self) -> np.ndarray:
        self.require_solution()
        assert self.result is not None
        model = self.result.model
        # (a model built on demand holds the one block x: its values are the whole vector, read without a build)
        x = self.result.x if isinstance(model, _direct.DirectModel) and not model.built else self.result.values["x"]
        frac = (x > 1e-6) & (x < 1 - 1e-6)
        if frac.any():
            raise SolveFailedError(f"{self.backend}: non-integral x in the returned solution ({int(frac.sum())} columns)",
                                   self.result)
        return np.flatnonzero(x > 0.5)

    @cached_property
    def allocation(self) -> dict[JobId, Config | None]:
        assert self.formulation is not None
        pt = self.formulation.inverse
        cols = self.chosen_columns
        ids = list(pt.job_ids) if pt.job_ids else self.problem.job_ids
        out: dict[JobId, Config | None] = dict.fromkeys(ids)
        confs = (pt.configs or self.problem.configs).configs
        out.update(zip([ids[j] for j in pt.job[cols].tolist()], [confs[c] for c in pt.config[cols].tolist()]))
        return out

    def place(self, previous: Placement | None = None) -> Placement:
        """Place the allocation on nodes and GPUs (keeping unchanged jobs of ``previous`` where they are)."""
        from .placement import place

        rigid = [j.id for j in self.problem.jobs if getattr(j, "kind", None) == "rigid"]
        self.placement = place(self.problem.cluster, self.allocation, previous, rigid=rigid)
        return self.placement

    def batch_sizes(self) -> dict[JobId, int | None]:
        """The global batch each placed job trains at in its configuration: an adaptive job's goodput-optimal batch
        (its goodput model's best (local batch, accumulation) there, as Pollux's agent picks it), a strong or rigid
        job's fixed ``batch_size`` (default: the model's initial batch). None for a job that gets nothing, or when
        the round's goodput is a matrix (no model to ask)."""
        goodput = self.problem.goodput
        out: dict[JobId, int | None] = {}
        for j in self.problem.jobs:
            c = self.allocation[j.id]
            m = goodput.get(j.id) if isinstance(goodput, Mapping) else None
            if c is None or m is None or not hasattr(m, "goodput"):
                out[j.id] = None
            elif j.kind == "adaptive":
                units = j.scale_unit
                r = m.goodput(c.gpu_type, c.n_nodes, c.n_gpus // units)
                out[j.id] = int(r.batch_size) if bool(r.feasible) else None
            else:
                out[j.id] = int(j.batch_size if j.batch_size is not None else m.init_batch)
        return out

    def check(self) -> list[Violation]:
        """Violations found by the independent checker (empty when the allocation is valid)."""
        from .check import check_allocation

        return check_allocation(self.problem, self.allocation)

    def explain(self) -> InfeasibilityReport:
        from ..infeasibility import explain_infeasibility

        assert self.model is not None
        return explain_infeasibility(self.model)

    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per job (for the command line's table)."""
        alloc = self.allocation
        pl = self.placement
        batches = self.batch_sizes() if isinstance(self.problem.goodput, Mapping) else None
        out = []
        for j in self.problem.jobs:
            c = alloc[j.id]
            row: dict[str, Any] = {
                "job": j.id,
                "kind": j.kind,
                "config": c.label if c else "-",
                "gpus": c.n_gpus if c else 0,
                "type": c.gpu_type if c else "-",
                "current": j.current.label if j.current else "-",
            }
            if pl is not None:
                row["nodes"] = " ".join(sorted({n for n, _ in pl.get(j.id, [])})) or "-"
            if batches is not None:
                b = batches[j.id]
                row["batch"] = "-" if b is None else b
            out.append(row)
        return out

    def summary(self) -> dict[str, Any]:
        r = self.result
        assert r is not None and self.formulation is not None
        return {
            "termination": str(r.termination),
            "backend": self.backend,
            "objective": r.objective_or_nan,
            "bound": r.bound,
            "gap": r.gap,
            "build_s": self.model.build_seconds if self.model is not None else None,
            "goodput_s": self.formulation.inverse.goodput_seconds,
            "timings": r.timings.as_dict(),
        }

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if self.has_solution:
            out["allocation"] = {str(k): (c.label if c else None) for k, c in self.allocation.items()}
            if self.placement is not None:
                out["placement"] = to_jsonable({str(k): v for k, v in self.placement.assignments.items()})
                out["evicted"] = [str(j) for j in self.placement.evicted]
                out["unplaced"] = [str(j) for j in self.placement.unplaced]
            if isinstance(self.problem.goodput, Mapping):
                out["batch_sizes"] = {str(k): b for k, b in self.batch_sizes().items()}
        return out
