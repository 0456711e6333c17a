"""Building: Sia's configuration ILP from the pair table, as a :class:`~schedopt.problem.Formulation`.

Model (names as in ``formulations/sia.md``):

* ``x``: one binary per *valid* (job, configuration) pair, a 1-d block over the flat pair list (jobs in input
  order, configurations in table order within a job), labelled ``<job id>@<n_nodes>x<n_gpus>x<type>``.
* ``one_config_per_job`` (labels: job ids), ``gpu_capacity`` (labels: GPU type names),
  ``virtual_node_capacity`` (only GPU types whose per-node GPU count is not a power of two; labels
  ``<type>:><size>``), ``forced_config`` (labels: ids of non-preemptible running jobs).
* With ``SiaSettings(change_penalty > 0, change_form="auxiliary")``: ``t`` (continuous in [0, 1], one per pair of
  a running job, labelled like ``x``) and ``change_above`` / ``change_below`` (``t >= x - prev``,
  ``t >= prev - x``), the published physical scheduler's auxiliaries; the structure is then GENERAL.

The formulation's typed inverse map is the :class:`~schedopt.sia.pairs.PairTable`; its structure tag is
:attr:`~schedopt.problem.Structure.MCKP` unless the auxiliaries are built.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model import LazyModule, LinearModel
from ..problem import Formulation, Structure
from .configs import ConfigTable
from .pairs import PairTable, ValidMemo
from .round import SiaRound
from .spec import is_pow2, virtual_bins

if TYPE_CHECKING:
    import scipy.sparse as sp
else:
    sp = LazyModule("scipy.sparse", globals(), "sp")  # imported when a matrix is first made (issue 42)

__all__ = ["FamilyRows", "SiaBuildCache", "build_formulation", "change_terms", "family_rows", "linear_objective",
           "objective_coefficients", "virtual_parts", "virtual_rows"]


def _indptr(rows: np.ndarray, n: int) -> np.ndarray:
    """CSR row pointers (int32, the index type scipy keeps for a model of this size) for entries whose row indices
    are ``rows`` (entries grouped by row in the stable order)."""
    out = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=n), out=out[1:])
    return out


@functools.cache
def _csr_attributes() -> tuple[bool, object]:
    """Whether a ``scipy.sparse.csr_matrix`` built from (data, indices, index pointers) holds exactly its shape,
    ``maxprint`` and the three arrays (what :func:`canonical_csr` sets), and the ``maxprint`` such a matrix gets
    (probed once, when the first matrix is made: importing this module imports no ``scipy.sparse``)."""
    probe = sp.csr_matrix((np.zeros(1), np.zeros(1, dtype=np.int32), np.array([0, 1], dtype=np.int32)), shape=(1, 1))
    return set(vars(probe)) == {"_shape", "maxprint", "data", "indices", "indptr"}, vars(probe).get("maxprint")


def __getattr__(name: str) -> Any:
    """``_CSR_DIRECT`` / ``_CSR_MAXPRINT``: :func:`_csr_attributes`' answers, probed on first use."""
    if name == "_CSR_DIRECT":
        return _csr_attributes()[0]
    if name == "_CSR_MAXPRINT":
        return _csr_attributes()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_INT32_MAX = int(np.iinfo(np.int32).max)


def canonical_csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """``scipy.sparse.csr_matrix((data, indices, indptr), shape=shape)`` for arrays this builder made in canonical
    form: float64 ``data``, int32 ``indices`` (sorted within each row, below ``shape[1]``) and int32 ``indptr``
    (``shape[0] + 1`` pointers ending at ``data.size``). scipy's construction would keep these very arrays; its
    index-type search and format check (about 30 us a matrix, four matrices a round) are skipped. Where scipy's
    matrix holds other attributes than these (another scipy version), it is built by scipy.
    ``tests/test_sia_incremental.py`` compares the result with scipy's construction."""
    direct, maxprint = _csr_attributes()
    if not direct or max(shape[0], shape[1], data.size) > _INT32_MAX:  # (scipy would widen the indices)
        return sp.csr_matrix((data, indices, indptr), shape=shape)
    out = sp.csr_matrix.__new__(sp.csr_matrix)
    out.__dict__.update(_shape=(int(shape[0]), int(shape[1])), maxprint=maxprint, data=data, indices=indices,
                        indptr=indptr)
    return out


def _no_rows(n: int) -> sp.csr_matrix:
    """``scipy.sparse.csr_matrix((0, n))`` from its three arrays (the same float64 data, int32 indices and index
    pointers)."""
    return canonical_csr(np.zeros(0), np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int32), (0, n))


class SiaBuildCache:
    """What one Sia build keeps for the next round's (a simulator's policy holds one across rounds): the column
    labels per job, and the valid pairs (:class:`~schedopt.sia.pairs.ValidMemo`: reused when the jobs' pruning
    fields are the previous round's). A job whose columns (configuration positions, in order) are those it had in the previous
    build, in the same configuration table, reuses its label block; only new or changed jobs' labels are formatted
    (the rest of the model is array arithmetic over all pairs, as cheap as a comparison). The built model is the
    one a build without the cache gives, array for array (``tests/test_sia_incremental.py``). ``reused`` /
    ``formatted``: pairs whose label was reused / formatted by the last build (all reused, with the label list,
    when the pair table's jobs and columns are the previous build's)."""

    def __init__(self) -> None:
        self._table: ConfigTable | None = None  # the configuration table the blocks index (a new one resets them)
        self._span: dict[object, tuple[int, int]] = {}  # job id -> (first pair, pairs) in the previous build
        self._config = np.zeros(0, dtype=np.int64)
        self._job = np.zeros(0, dtype=np.int64)
        self._ids: tuple[object, ...] | None = None
        self._labels = np.zeros(0, dtype=object)
        self._list: list[str] | None = None  # _labels.tolist(), made when asked
        self.reused = 0
        self.formatted = 0
        self.valid = ValidMemo()  # the last round's valid (job, configuration) pairs (pruning reuses them)

    def labels(self, pt: PairTable, cfg: ConfigTable) -> np.ndarray:
        """The ``x`` labels (``<job id>@<configuration label>``) of ``pt``'s pairs, reusing unchanged blocks."""
        P, J = len(pt), pt.n_jobs
        if (self._ids is not None and pt.job_ids == self._ids and (self._table is cfg or self._table == cfg)
                and np.array_equal(pt.config, self._config) and np.array_equal(pt.job, self._job)):
            # the same jobs in the same table with the same columns as the previous build: every block is reused
            self._config, self._job = pt.config, pt.job
            self.reused, self.formatted = P, 0
            return self._labels
        counts = np.bincount(pt.job, minlength=J)
        starts = np.cumsum(counts) - counts
        prev_start = np.full(J, -1, dtype=np.int64)
        prev_count = np.full(J, -1, dtype=np.int64)
        same_table = self._table is not None and (self._table is cfg or self._table == cfg)
        if same_table:
            assert self._table is not None
            cfg = self._table  # an equal table (a problem makes its own each round): keep the one whose labels exist
        config_labels = cfg.labels
        if same_table and self._span:
            span = self._span
            for i, jid in enumerate(pt.job_ids):
                got = span.get(jid)
                if got is not None:
                    prev_start[i], prev_count[i] = got
        same = (prev_start >= 0) & (prev_count == counts)
        out = np.empty(P, dtype=object)
        reuse = np.zeros(P, dtype=bool)
        if same.any():
            cand = np.flatnonzero(same[pt.job])
            pj = pt.job[cand]
            pidx = prev_start[pj] + (cand - starts[pj])
            eq = self._config[pidx] == pt.config[cand]
            ok_job = same & (np.bincount(pj, weights=eq, minlength=J) == counts)
            keep = ok_job[pj]
            reuse[cand[keep]] = True
            out[cand[keep]] = self._labels[pidx[keep]]
        new = np.flatnonzero(~reuse)
        if new.size:
            ids = np.empty(J, dtype=object)
            need = np.unique(pt.job[new])
            ids[need] = [str(pt.job_ids[i]) for i in need.tolist()]
            out[new] = ids[pt.job[new]] + "@" + config_labels[pt.config[new]]
        self._table = cfg
        self._span = {jid: (s, c) for jid, s, c in zip(pt.job_ids, starts.tolist(), counts.tolist())}
        self._config, self._job, self._ids, self._labels, self._list = pt.config, pt.job, tuple(pt.job_ids), out, None
        self.reused, self.formatted = P - int(new.size), int(new.size)
        return out

    def label_list(self) -> list[str]:
        """The last :meth:`labels` answer as a list (kept while the labels are reused whole; do not modify it)."""
        if self._list is None:
            self._list = self._labels.tolist()
        return self._list


def objective_coefficients(problem: SiaRound) -> tuple[np.ndarray, float, str]:
    """(coefficient per column, constant, sense) of the objective before the change penalty: ``U^p`` (rounded and
    clipped when the settings say so) ``-/+ lam`` per column, ``lam * jobs`` as the constant."""
    pt = problem.valid_pairs()
    n = len(problem.jobs)
    up = problem.settings.round_coefficients(pt.utility ** problem.p)
    if problem.p > 0:
        return up + problem.lam, -problem.lam * n, "maximize"
    return up - problem.lam, problem.lam * n, "minimize"


def change_terms(problem: SiaRound) -> tuple[np.ndarray, float]:
    """The change penalty (lambda_a) as its exact linear equivalent: (per-column coefficient change, constant).

    For binaries, ``sum_c |x_ic - prev_ic| = sum_{c != cur} x_ic + 1 - x_i,cur`` for a job running in ``cur``
    (``1`` plus every column when ``cur`` is not a column); the penalty is added in the objective's worse direction
    (``+`` when minimising). The auxiliary form reaches the same value: each ``t`` sits at its lower bound
    ``|x - prev|`` at an optimum, since its objective coefficient is a penalty."""
    pt = problem.valid_pairs()
    lam_a = problem.settings.change_penalty
    running = pt.current is not None and lam_a > 0
    if not running:
        return np.zeros(len(pt)), 0.0
    assert pt.current is not None
    s = lam_a if problem.p < 0 else -lam_a
    has_cur = pt.current[pt.job] != -1
    at_cur = pt.is_current
    delta = np.where(has_cur, np.where(at_cur, -s, s), 0.0)
    const = s * float(np.count_nonzero(pt.current != -1))
    return delta, const


def virtual_parts(problem: SiaRound) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """The ``virtual_node_capacity`` rows over the columns as CSR arrays, without a matrix: ``(data, indices,
    indptr, upper, labels)`` (float64 data, int32 column indices sorted within each row, int32 row pointers; what
    :func:`virtual_rows`' matrix holds). For a type whose nodes split into power-of-two virtual nodes d_1 > d_2 >
    ... (R not a power of two), for each level j < m: the GPUs of power-of-two blocks larger than d_{j+1} (a partial
    configuration is one block; a rigid shape's remainder is its binary digits) plus (d_1 + .. + d_j) per whole node
    <= (d_1 + .. + d_j) N_t."""
    pt = problem.valid_pairs()
    split = [(k, t) for k, t in enumerate(problem.cluster.gpu_types) if not is_pow2(t.gpus_per_node) and t.nodes > 0]
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    upper: list[int] = []
    labels: list[str] = []
    if split:
        cfg = problem.configs
        tix = cfg.type_index[pt.config]
        whole, part = cfg.whole[pt.config], cfg.part[pt.config]
        for k, t in split:
            bins = virtual_bins(t.gpus_per_node)
            of_t = tix == k
            for lvl in range(len(bins) - 1):
                D = sum(bins[: lvl + 1])
                s = bins[lvl + 1]
                big = part & ~((s << 1) - 1)  # the binary digits of the remainder larger than s
                coef = (D * whole + big) * of_t
                nz = np.flatnonzero(coef)
                cols.append(nz)
                vals.append(coef[nz].astype(np.float64))
                upper.append(D * t.nodes)
                labels.append(f"{t.name}:>{s}")
    if not upper:
        return np.zeros(0), np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int32), np.zeros(0), []
    ptr = np.zeros(len(upper) + 1, dtype=np.int32)
    np.cumsum([c.size for c in cols], out=ptr[1:])
    return (np.concatenate(vals), np.concatenate(cols).astype(np.int32), ptr, np.asarray(upper, dtype=np.float64),
            labels)


def virtual_rows(problem: SiaRound) -> tuple[sp.csr_matrix, np.ndarray, list[str]]:
    """The ``virtual_node_capacity`` rows over the columns (the matrix of :func:`virtual_parts`' arrays, as
    ``scipy.sparse.csr_matrix((data, (rows, cols)), shape)`` gives it), their upper bounds and labels."""
    data, indices, indptr, upper, labels = virtual_parts(problem)
    return canonical_csr(data, indices, indptr, (int(upper.size), len(problem.valid_pairs()))), upper, labels


@dataclass(frozen=True, eq=False)
class FamilyRows:
    """The four constraint families of the Sia model over the ``x`` columns (:func:`family_rows`), as the arrays
    of their CSR matrices; each matrix (the canonical CSR the model keeps) is made the first time it is asked for
    (:attr:`one`, :attr:`gpu`, :attr:`virtual`, :attr:`forced`), so that a round solved from the arrays alone
    (``schedopt.sia.direct``) makes none and imports no ``scipy.sparse``.

    ``one`` (jobs x pairs, upper 1): row pointers ``job_ptr`` (the pairs are sorted by job), every column once;
    ``gpu`` (types x pairs, upper ``gpu_upper``): the columns by type :attr:`gpu_cols` (a stable sort), row
    pointers :attr:`gpu_ptr`, weights :attr:`gpu_data` (the columns' GPU counts in that order), made when asked; ``virtual`` (upper
    ``virtual_upper``, row labels ``virtual_labels``): ``virtual_data`` / ``virtual_cols`` / ``virtual_ptr``;
    ``forced`` (one row per forced pair, column ``forced_cols``, lower 1). ``pair_job`` / ``pair_type`` /
    ``pair_gpus``: each column's job, GPU type and GPU count (float64)."""

    n_cols: int
    job_ptr: np.ndarray
    gpu_upper: np.ndarray
    virtual_data: np.ndarray
    virtual_cols: np.ndarray
    virtual_ptr: np.ndarray
    virtual_upper: np.ndarray
    virtual_labels: list[str]
    forced_cols: np.ndarray
    #: per pair: its job's position, its GPU type's position and its GPU count (float64): the one_config_per_job
    #: and gpu_capacity rows of its column and its weight in the latter
    pair_job: np.ndarray
    pair_type: np.ndarray
    pair_gpus: np.ndarray

    @property
    def n_jobs(self) -> int:
        """Rows of ``one_config_per_job``."""
        return int(self.job_ptr.size) - 1

    @property
    def n_types(self) -> int:
        """Rows of ``gpu_capacity``."""
        return int(self.gpu_upper.size)

    @property
    def n_virtual(self) -> int:
        """Rows of ``virtual_node_capacity``."""
        return int(self.virtual_ptr.size) - 1

    @property
    def n_forced(self) -> int:
        """Rows of ``forced_config``."""
        return int(self.forced_cols.size)

    @cached_property
    def n_rows(self) -> int:
        """Rows of the four families together (the model's rows, in this order)."""
        return self.n_jobs + self.n_types + self.n_virtual + self.n_forced

    @cached_property
    def gpu_cols(self) -> np.ndarray:
        """``gpu_capacity``'s column indices in row order: the columns by GPU type (a stable sort; int32)."""
        return np.argsort(self.pair_type, kind="stable").astype(np.int32)

    @cached_property
    def gpu_ptr(self) -> np.ndarray:
        """``gpu_capacity``'s row pointers (int32)."""
        return _indptr(self.pair_type, int(self.gpu_upper.size))

    @cached_property
    def gpu_data(self) -> np.ndarray:
        """``gpu_capacity``'s entries in row order (the GPU counts of ``gpu_cols``)."""
        return self.pair_gpus[self.gpu_cols]

    @cached_property
    def one(self) -> sp.csr_matrix:
        """``one_config_per_job``'s matrix."""
        P = self.n_cols
        return canonical_csr(np.ones(P), np.arange(P, dtype=np.int32), self.job_ptr, (self.n_jobs, P))

    @cached_property
    def gpu(self) -> sp.csr_matrix:
        """``gpu_capacity``'s matrix."""
        return canonical_csr(self.gpu_data, self.gpu_cols, self.gpu_ptr, (self.n_types, self.n_cols))

    @cached_property
    def virtual(self) -> sp.csr_matrix:
        """``virtual_node_capacity``'s matrix."""
        return canonical_csr(self.virtual_data, self.virtual_cols, self.virtual_ptr, (self.n_virtual, self.n_cols))

    @cached_property
    def forced(self) -> sp.csr_matrix:
        """``forced_config``'s matrix."""
        F = self.n_forced
        return canonical_csr(np.ones(F), self.forced_cols.astype(np.int32), np.arange(F + 1, dtype=np.int32),
                             (F, self.n_cols))

    def csr_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(data, indices, indptr)`` of the four families stacked in order (what
        ``schedopt.model.stack_csr`` of :attr:`one`, :attr:`gpu`, :attr:`virtual` and :attr:`forced` holds),
        without a matrix."""
        P, F = self.n_cols, self.n_forced
        n1, n2, n3 = P, P, int(self.virtual_ptr[-1])
        data = np.concatenate((np.ones(P), self.gpu_data, self.virtual_data, np.ones(F)))
        indices = np.concatenate((np.arange(P, dtype=np.int32), self.gpu_cols, self.virtual_cols,
                                  self.forced_cols.astype(np.int32)))
        indptr = np.concatenate((self.job_ptr[:-1], self.gpu_ptr[:-1] + np.int32(n1),
                                 self.virtual_ptr[:-1] + np.int32(n1 + n2),
                                 np.arange(F + 1, dtype=np.int32) + np.int32(n1 + n2 + n3)))
        return data, indices, indptr

    def activity(self, x: np.ndarray) -> np.ndarray:
        """The rows' activities ``A @ x`` of the four families stacked (float for float what the CSR product
        gives: each row's terms summed in column order from 0.0). Every coefficient is positive, so ``abs(A) @
        |x|`` is ``activity(|x|)``."""
        J, T, V = self.n_jobs, self.n_types, self.n_virtual
        parts = [np.bincount(self.pair_job, weights=x, minlength=J),
                 np.bincount(self.pair_type, weights=self.pair_gpus * x, minlength=T)]
        if V:
            vrow = np.repeat(np.arange(V), np.diff(self.virtual_ptr))
            parts.append(np.bincount(vrow, weights=self.virtual_data * x[self.virtual_cols], minlength=V))
        if self.forced_cols.size:
            parts.append(x[self.forced_cols] + 0.0)
        return np.concatenate(parts).astype(np.float64, copy=False)  # (bincount of no entries is int64)


def family_rows(problem: SiaRound) -> FamilyRows:
    """The constraint families of ``problem``'s model as the arrays of their CSR matrices (:class:`FamilyRows`;
    the pairs are sorted by job, so one_config_per_job's row pointers are a cumsum of the pairs per job, and
    gpu_capacity's rows come from a stable sort by GPU type; int32 indices, what scipy keeps for them anyway: the
    model takes such a canonical CSR as is). :func:`build_formulation` adds their matrices to the model,
    :mod:`schedopt.sia.direct` solves from the arrays without the model."""
    pt = problem.valid_pairs()
    cfg = problem.configs
    gpus = cfg.n_gpus[pt.config].astype(np.float64)
    tix = cfg.type_index[pt.config]
    vdata, vcols, vptr, vup, vlab = virtual_parts(problem)
    return FamilyRows(len(pt), _indptr(pt.job, len(problem.jobs)), problem.available.astype(np.float64), vdata, vcols,
                      vptr, vup, vlab, np.flatnonzero(pt.forced), pt.job, tix, gpus)


def linear_objective(problem: SiaRound) -> tuple[np.ndarray, float, str]:
    """(coefficient per ``x`` column, constant, sense) of the model's objective without the auxiliary change
    variables: :func:`objective_coefficients` plus, with a change penalty, its linear form
    (:func:`change_terms`)."""
    coef, const, sense = objective_coefficients(problem)
    if problem.settings.change_penalty > 0:
        delta, cconst = change_terms(problem)
        return coef + delta, const + cconst, sense
    return coef, const, sense


def build_formulation(problem: SiaRound, cache: SiaBuildCache | None = None) -> Formulation[PairTable]:
    """The configuration ILP (see the module docstring). ``model.build_seconds`` covers pruning, normalisation
    and assembly; goodput-model evaluation is ``formulation.inverse.goodput_seconds``. ``cache``: a
    :class:`SiaBuildCache` carried across rounds (the same model, built incrementally where jobs are unchanged)."""
    pt = problem.valid_pairs()
    t0 = time.perf_counter()
    cfg = problem.configs
    settings = problem.settings
    P = len(pt)
    auxiliary = settings.change_penalty > 0 and settings.change_form == "auxiliary"
    coef, const, sense = objective_coefficients(problem) if auxiliary else linear_objective(problem)
    m = LinearModel("sia", sense=sense)
    if cache is not None:
        labels = cache.labels(pt, cfg)
        label_list = cache.label_list()
    else:
        ids = np.array([str(j) for j in pt.job_ids], dtype=object)
        labels = ids[pt.job] + "@" + cfg.labels[pt.config] if P else np.zeros(0, dtype=object)
        label_list = labels.tolist()
    m.add_variables("x", P, kind="binary", labels=label_list)
    rows = family_rows(problem)
    m._add_constraints_owned("one_config_per_job", rows.one, upper=1.0, labels=list(pt.job_ids))
    m._add_constraints_owned("gpu_capacity", rows.gpu, upper=rows.gpu_upper, labels=problem.cluster.type_names)
    m._add_constraints_owned("virtual_node_capacity", rows.virtual, upper=rows.virtual_upper,
                             labels=rows.virtual_labels)
    m._add_constraints_owned("forced_config", rows.forced, lower=1.0,
                             labels=[pt.job_ids[i] for i in pt.job[rows.forced_cols].tolist()])
    if auxiliary:
        t_coef, cconst = _add_change_auxiliaries(m, problem, pt, labels)
        m.set_objective({"x": coef, "t": t_coef}, constant=const + cconst)
    else:
        m.set_objective({"x": coef}, constant=const)
    structure = Structure.GENERAL if auxiliary else Structure.MCKP
    m.structure = structure
    m.build_seconds = pt.seconds + (time.perf_counter() - t0)
    return Formulation(model=m, inverse=pt, structure=structure, problem="sia")


def _add_change_auxiliaries(m: LinearModel, problem: SiaRound, pt: PairTable,
                            labels: np.ndarray) -> tuple[np.ndarray, float]:
    """The published auxiliaries: ``t`` per pair of a running job, ``t - x >= -prev`` and ``t + x >= prev``,
    objective ``+/- lambda_a t``; returns (t's objective coefficients, the constant for running jobs whose current
    configuration is no column: their ``|x_cur - 1|`` is 1 whatever is chosen)."""
    assert pt.current is not None
    lam_a = problem.settings.change_penalty
    s = lam_a if problem.p < 0 else -lam_a
    cols = np.flatnonzero(pt.current[pt.job] != -1)
    K = cols.size
    prev = pt.is_current[cols].astype(np.float64)
    m.add_variables("t", K, lower=0.0, upper=1.0, kind="continuous",
                    labels=(labels[cols] if K else np.zeros(0, dtype=object)).tolist())
    eye = sp.identity(K, format="csr")
    X = sp.csr_matrix((np.ones(K), cols, np.arange(K + 1)), shape=(K, len(pt)))
    row_labels = (labels[cols] if K else np.zeros(0, dtype=object)).tolist()
    m.add_constraints("change_above", {"t": eye, "x": -X}, lower=-prev, labels=row_labels)
    m.add_constraints("change_below", {"t": eye, "x": X}, lower=prev, labels=row_labels)
    running = np.flatnonzero(pt.current != -1)
    with_col = np.unique(pt.job[cols[prev > 0]]) if K else np.zeros(0, np.int64)
    return np.full(K, s), s * float(running.size - with_col.size)
