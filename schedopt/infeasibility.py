"""Explain an infeasible model in its own names: which constraint families (and which labelled rows) conflict.

Strategy:

1. If the LP relaxation is already infeasible, HiGHS's irreducible infeasible subsystem (IIS) of the relaxation
   gives the conflicting rows directly.
2. Otherwise (only the integer model is infeasible) a **deletion filter over families**: drop one family at a time
   and keep it dropped while the rest stays infeasible; what remains is a minimal set of families that cannot hold
   together. Then an **elastic filter** inside those families (one slack per row, minimise the total slack) names
   the rows that must give way, with their labels (e.g. which GPU type or which job).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .model import LinearModel
from .results import Termination, TerminationReason

__all__ = ["InfeasibilityReport", "explain_infeasibility"]


@dataclass
class InfeasibilityReport:
    """Which named constraint families (and rows) conflict.

    ``feasible`` is True when a feasible point was found (nothing conflicts), False when infeasibility was proven,
    and ``None`` when the analysis could not decide (the feasibility solve ended for another reason: a time limit
    without a solution, an error); ``termination`` is then the solve's termination, which says why.
    """

    feasible: bool | None
    families: list[str] = field(default_factory=list)
    rows: list[str] = field(default_factory=list)  #: readable row labels, ``family[label]``
    bounds_only: bool = False  #: the variable bounds alone (or integrality) are infeasible
    method: str = ""
    #: the termination of the feasibility solve that decided (or failed to decide) the question
    termination: Termination | None = None

    @property
    def decided(self) -> bool:
        return self.feasible is not None

    def __str__(self) -> str:
        if self.feasible is None:
            return f"undecided: the feasibility solve ended {self.termination} before proving feasibility or infeasibility"
        if self.feasible:
            return "the model is feasible"
        if self.bounds_only:
            return "infeasible: the variable bounds and integrality alone admit no point"
        rows = f"; rows: {', '.join(self.rows[:20])}" + (" ..." if len(self.rows) > 20 else "") if self.rows else ""
        return f"infeasible: constraint families {', '.join(self.families)} conflict{rows} ({self.method})"


_PROVEN_INFEASIBLE = (TerminationReason.INFEASIBLE, TerminationReason.INFEASIBLE_OR_UNBOUNDED)
#: with a zero objective, UNBOUNDED cannot occur; a held solution proves feasibility
_PROVEN_FEASIBLE = (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE, TerminationReason.UNBOUNDED)


def _termination(model: LinearModel, time_limit: float | None) -> Termination:
    from .solve import solve

    m = model.copy()
    m.set_objective(np.zeros(m.num_cols))
    return solve(m, "highs", time_limit=time_limit).termination


def _status(model: LinearModel, time_limit: float | None) -> TerminationReason:
    return _termination(model, time_limit).reason


def _rows_to_labels(model: LinearModel, rows: np.ndarray) -> tuple[list[str], list[str]]:
    fams: list[str] = []
    labels: list[str] = []
    for f in model.families.values():
        sel = rows[(rows >= f.start) & (rows < f.stop)]
        if sel.size:
            fams.append(f.name)
            labels.extend(f.label_of(int(r - f.start)) for r in np.sort(sel))
    return fams, labels


def _highs_iis(model: LinearModel) -> np.ndarray | None:
    import highspy

    from .export import to_highs

    h = to_highs(model.relax())
    h.setOptionValue("iis_strategy", 1)  # 1: prioritise rows (HiGHS 1.12); the default (0) only reads a ray
    iis = highspy.HighsIis()
    try:
        status = h.getIis(iis)
    except Exception:
        return None
    if status == highspy.HighsStatus.kError or not getattr(iis, "valid", False):
        return None
    rows = np.asarray(getattr(iis, "row_index", []), dtype=np.int64)
    return rows if rows.size else None


def _elastic_rows(model: LinearModel, families: list[str], time_limit: float | None) -> np.ndarray:
    """Rows of ``families`` that need a positive slack in the minimum-total-slack elastic model."""
    from .solve import solve

    arr = model.to_arrays()
    rows = np.concatenate([np.arange(model.families[f].start, model.families[f].stop) for f in families])
    k = rows.size
    n = arr.num_cols
    # columns: original x, then s_plus (k), s_minus (k); row r: lower <= a x + s_plus - s_minus <= upper
    A = arr.A.tocsr()
    S = sp.csr_matrix((np.ones(k), (rows, np.arange(k))), shape=(arr.num_rows, k))
    A_el = sp.hstack([A, S, -S], format="csr")
    c = np.concatenate([np.zeros(n), np.ones(2 * k)])
    el = LinearModel.from_arrays(
        c=c,
        A=A_el,
        row_lower=arr.row_lower,
        row_upper=arr.row_upper,
        col_lower=np.concatenate([arr.col_lower, np.zeros(2 * k)]),
        col_upper=np.concatenate([arr.col_upper, np.full(2 * k, np.inf)]),
        integrality=np.concatenate([arr.integrality, np.zeros(2 * k, dtype=np.uint8)]),
        sense="minimize",
        name=f"{model.name}_elastic",
    )
    res = solve(el, "highs", time_limit=time_limit)
    if not res.has_solution:
        return rows
    s = res.x[n:]
    slack = s[:k] + s[k:]
    return rows[slack > 1e-7]


def explain_infeasibility(model: LinearModel, *, time_limit: float | None = 60.0) -> InfeasibilityReport:
    """Name the constraint families (and rows, by label) that make ``model`` infeasible.

    Returns ``InfeasibilityReport(feasible=True)`` when a feasible point was found, and ``feasible=None``
    (undecided, with the termination that says why) when the feasibility solve ended otherwise: a time limit
    without a solution, an error. Only a proof of infeasibility leads to naming families.
    """
    full = _termination(model, time_limit)
    if full.reason in _PROVEN_FEASIBLE:
        return InfeasibilityReport(feasible=True, method="solved", termination=full)
    if full.reason not in _PROVEN_INFEASIBLE:
        return InfeasibilityReport(feasible=None, method="undecided", termination=full)
    # bounds and integrality alone?
    if not model.families or _status(model.without_families(list(model.families)), time_limit) is TerminationReason.INFEASIBLE:
        return InfeasibilityReport(feasible=False, bounds_only=True, method="bounds", termination=full)
    relaxed = model.relax()
    if _status(relaxed, time_limit) is TerminationReason.INFEASIBLE:
        rows = _highs_iis(model)
        if rows is not None:
            fams, labels = _rows_to_labels(model, rows)
            if fams:
                return InfeasibilityReport(False, fams, labels, method="HiGHS IIS of the LP relaxation", termination=full)
    # deletion filter over families (on the integer model)
    keep = list(model.families)
    for fam in list(keep):
        trial = [f for f in keep if f != fam]
        drop = [f for f in model.families if f not in trial]
        st = _status(model.without_families(drop), time_limit)
        if st is TerminationReason.INFEASIBLE:
            keep = trial
    rows = _elastic_rows(model, keep, time_limit)
    _, labels = _rows_to_labels(model, rows)
    return InfeasibilityReport(False, keep, labels, method="deletion filter over families + elastic rows",
                               termination=full)
