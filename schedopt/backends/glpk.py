"""GLPK through swiglpk: an optional extra (``pip install swiglpk``; from a checkout ``pip install -e '.[glpk]'``), since GLPK is GPL-licensed.

Measured on Sia-shaped ILPs it is a fast exact solver (presolve + the branch-and-cut of ``glp_intopt``). GLPK exposes
no dual bound after a time limit: the bound is then reported as unknown (``±inf``), never guessed.

Ctrl-C (issue 20). swiglpk holds the GIL through ``glp_intopt`` / ``glp_simplex``, so no Python signal handler can
run until the solve returns (a Ctrl-C used to wait for GLPK's own time limit). GLPK's documented cancel,
``glp_ios_terminate`` from a ``cb_func`` callback, needs a C function pointer that swiglpk cannot take from Python,
and ``glp_error_hook`` / ``glp_term_hook`` are C pointers too (and cannot stop a solve). What works: the two solve
calls go through ``ctypes`` into the same ``libglpk`` that swiglpk loaded (ctypes releases the GIL), on the
swiglpk-made ``glp_prob`` and parameter struct, inside :func:`~schedopt.backends.base.run_interruptible`; the stop
shortens ``tm_lim`` in that live struct to 1 ms. GLPK keeps the caller's parameter pointer and reads ``tm_lim``
at every node of its branch-and-bound (``ios_driver``) and every simplex iteration check, so it stops at the next
check with the incumbent it holds (measured: 0.1 s after the signal on the market-split instance), and the result
is reported with :attr:`Limit.INTERRUPTED`. GLPK in this build is not thread-safe (``glp_config("TLS")`` is
NULL: one global environment), so one lock serialises every glpk solve, as the GIL did before.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import math
import os
import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ..results import Limit, SolveResult, TerminationReason
from .base import Backend, Capabilities, SolveParams, interrupted_reason, run_interruptible

if TYPE_CHECKING:
    import scipy.sparse as sp

    from ..model import LinearModel, ModelArrays


def _bnd_type(g: Any, lo: float, up: float) -> int:
    fl, fu = math.isfinite(lo), math.isfinite(up)
    if fl and fu:
        return int(g.GLP_FX if lo == up else g.GLP_DB)
    if fl:
        return int(g.GLP_LO)
    if fu:
        return int(g.GLP_UP)
    return int(g.GLP_FR)


#: entries below this fraction of their row's largest magnitude are not handed to GLPK: its presolve mishandles them
#: (max 3x0 + 4x1 + 5x2, x integer <= 10, 1e-12 x0 + x1 + x2 <= 7 came back OPTIMAL 30 where 65 is feasible); the
#: solution is still checked against the full model (SolveResult.create), so dropping them cannot pass a violation
RELATIVE_DROP = 1e-9


def _without_relatively_tiny(A: sp.csr_matrix) -> sp.csr_matrix:
    A = A.tocsr()
    if not A.nnz:
        return A
    absd = np.abs(A.data)
    row_max = np.maximum.reduceat(absd, A.indptr[:-1][np.diff(A.indptr) > 0])
    per_entry = np.repeat(row_max, np.diff(A.indptr)[np.diff(A.indptr) > 0])
    tiny = absd < RELATIVE_DROP * per_entry
    if not tiny.any():
        return A
    out = A.copy()
    out.data[tiny] = 0.0
    out.eliminate_zeros()
    return out


#: GLPK has one global environment in this build: one solve at a time (the GIL serialised them before the solve
#: calls released it)
_GLPK_LOCK = threading.Lock()


@functools.cache
def _libglpk() -> ctypes.CDLL | None:
    """The ``libglpk`` swiglpk itself loaded (its wheel bundles it next to the package), for calls that release the
    GIL; ``None`` when it cannot be found (a swiglpk built against a system GLPK): solves then hold the GIL and
    Ctrl-C waits for them, as before."""
    import swiglpk

    here = os.path.dirname(os.path.abspath(swiglpk.__file__))
    found = sorted(glob.glob(os.path.join(here, "..", "swiglpk.libs", "libglpk*.so*")))
    if not found:
        from swiglpk import _swiglpk

        found = [_swiglpk.__file__]  # statically linked builds export the symbols from the extension itself
    try:
        lib = ctypes.CDLL(found[0])
        for fn in (lib.glp_intopt, lib.glp_simplex):
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            fn.restype = ctypes.c_int
        lib.glp_version.restype = ctypes.c_char_p
    except (OSError, AttributeError):
        return None
    import swiglpk as g

    return lib if lib.glp_version().decode() == str(g.glp_version()) else None


def _run(g: Any, name: str, lp: Any, parm: Any) -> tuple[int, bool]:
    """``glp_intopt`` / ``glp_simplex`` (``name``) on ``lp`` with ``parm``, stoppable by Ctrl-C: returns the GLPK
    return code and whether a Ctrl-C stopped it (see the module docstring)."""
    lib = _libglpk()
    if lib is None:
        return getattr(g, name)(lp, parm), False

    def stop() -> None:
        parm.tm_lim = 1  # read by GLPK at its next check: it returns GLP_ETMLIM with what it holds

    return run_interruptible(lambda: getattr(lib, name)(int(lp), int(parm.this)), stop)


class GlpkBackend(Backend):
    name = "glpk"
    capabilities = Capabilities(lp=True, mip=True, duals=True, iis=False, warm_start=False, time_limit_incumbent=True)
    requires = ("swiglpk",)
    install_hint = "pip install swiglpk, or pip install -e '.[glpk]' from a checkout; GLPK is GPL-licensed"

    def version(self) -> str:
        import swiglpk

        return str(swiglpk.glp_version())

    def known_options(self) -> frozenset[str]:
        """The fields of GLPK's ``glp_iocp`` (MIP) and ``glp_smcp`` (simplex) parameter structs."""
        import swiglpk as g

        return frozenset(a for obj in (g.glp_iocp(), g.glp_smcp()) for a in dir(obj)
                         if not a.startswith("_") and a not in ("this", "thisown"))

    def solve(self, model: LinearModel, params: SolveParams) -> SolveResult:
        import swiglpk as g

        arr = model.to_arrays()
        t0 = time.perf_counter()
        with _GLPK_LOCK:
            g.glp_term_out(g.GLP_ON if params.verbose else g.GLP_OFF)
            lp = g.glp_create_prob()
            try:
                return self._solve(g, lp, model, arr, params, t0)
            except KeyboardInterrupt:
                # a second Ctrl-C leaves the solve thread running on lp until its next check: freeing lp under it
                # would crash the interpreter on its way out, so it is left to the process's exit
                lp = None
                raise
            finally:
                if lp is not None:
                    g.glp_delete_prob(lp)

    def _solve(self, g: Any, lp: Any, model: LinearModel, arr: ModelArrays, params: SolveParams, t0: float) -> SolveResult:
        n, m = arr.num_cols, arr.num_rows
        g.glp_set_obj_dir(lp, g.GLP_MAX if arr.maximize else g.GLP_MIN)
        g.glp_set_obj_coef(lp, 0, float(arr.constant))
        if m:
            g.glp_add_rows(lp, m)
        if n:
            g.glp_add_cols(lp, n)
        for i, (lo, up) in enumerate(zip(arr.row_lower.tolist(), arr.row_upper.tolist()), start=1):
            g.glp_set_row_bnds(lp, i, _bnd_type(g, lo, up), lo if math.isfinite(lo) else 0.0, up if math.isfinite(up) else 0.0)
        integ = arr.integrality.tolist()
        for j, (lo, up, cj, it) in enumerate(zip(arr.col_lower.tolist(), arr.col_upper.tolist(), arr.c.tolist(), integ), start=1):
            g.glp_set_col_bnds(lp, j, _bnd_type(g, lo, up), lo if math.isfinite(lo) else 0.0, up if math.isfinite(up) else 0.0)
            if cj:
                g.glp_set_obj_coef(lp, j, cj)
            if it:
                g.glp_set_col_kind(lp, j, g.GLP_IV)
        coo = _without_relatively_tiny(arr.A).tocoo()
        ne = coo.nnz
        if ne:
            # 1-based arrays; swiglpk 5.0.13's as_intArray helper returns garbage, so fill them element-wise
            ia, ja, ar = g.intArray(ne + 1), g.intArray(ne + 1), g.doubleArray(ne + 1)
            for k, (r, c, v) in enumerate(zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist()), start=1):
                ia[k] = r + 1
                ja[k] = c + 1
                ar[k] = v
            g.glp_load_matrix(lp, ne, ia, ja, ar)
        # GLPK's tm_lim is a C int of milliseconds: a longer limit (about 24.8 days) is no limit
        tl_ms = None if params.time_limit is None else max(1, int(params.time_limit * 1000))
        if tl_ms is not None and tl_ms > 2**31 - 1:
            tl_ms = None
        t1 = time.perf_counter()
        x = None
        duals = None
        limit = None
        bound = None
        if arr.is_mip:
            parm = g.glp_iocp()
            g.glp_init_iocp(parm)
            parm.presolve = g.GLP_ON
            parm.msg_lev = g.GLP_MSG_ALL if params.verbose else g.GLP_MSG_OFF
            if tl_ms is not None:
                parm.tm_lim = tl_ms
            if params.mip_rel_gap is not None:
                parm.mip_gap = float(params.mip_rel_gap)
            for key, v in params.solver_options.items():
                setattr(parm, key, v)
            ret, interrupted = _run(g, "glp_intopt", lp, parm)
            t2 = time.perf_counter()
            st = g.glp_mip_status(lp)
            if st in (g.GLP_OPT, g.GLP_FEAS):
                x = np.array([g.glp_mip_col_val(lp, j) for j in range(1, n + 1)], dtype=float)
            if ret == 0 and st == g.GLP_OPT:
                reason = TerminationReason.OPTIMAL
            elif ret in (g.GLP_ETMLIM, g.GLP_EMIPGAP, g.GLP_ESTOP) or (ret == 0 and st == g.GLP_FEAS):
                if ret == g.GLP_EMIPGAP and x is not None:
                    # stopped within the requested relative gap: GLPK guarantees
                    # |best_mip - best_bound| <= mip_gap * (|best_mip| + DBL_EPSILON), so that is the bound we can claim
                    reason = TerminationReason.OPTIMAL
                    obj = float(arr.c @ x + arr.constant)
                    slack = float(parm.mip_gap) * (abs(obj) + 2.220446049250313e-16)
                    bound = obj + slack if arr.maximize else obj - slack
                else:
                    reason = TerminationReason.FEASIBLE if x is not None else TerminationReason.NO_SOLUTION_FOUND
                    limit = Limit.TIME if ret == g.GLP_ETMLIM else Limit.INTERRUPTED
            elif ret == g.GLP_ENOPFS or st == g.GLP_NOFEAS:
                reason = TerminationReason.INFEASIBLE
            elif ret == g.GLP_ENODFS:
                reason = TerminationReason.INFEASIBLE_OR_UNBOUNDED
            else:
                reason = TerminationReason.ERROR
            if interrupted:
                reason, limit = interrupted_reason(reason, x is not None)
                bound = None if reason is not TerminationReason.OPTIMAL else bound
            detail = f"glp_intopt returned {ret}, status {st}"
        else:
            parm = g.glp_smcp()
            g.glp_init_smcp(parm)
            parm.presolve = g.GLP_ON
            parm.msg_lev = g.GLP_MSG_ALL if params.verbose else g.GLP_MSG_OFF
            if tl_ms is not None:
                parm.tm_lim = tl_ms
            ret, interrupted = _run(g, "glp_simplex", lp, parm)
            t2 = time.perf_counter()
            st = g.glp_get_status(lp)
            if ret == 0 and st == g.GLP_OPT:
                reason = TerminationReason.OPTIMAL
                x = np.array([g.glp_get_col_prim(lp, j) for j in range(1, n + 1)], dtype=float)
                duals = np.array([g.glp_get_row_dual(lp, i) for i in range(1, m + 1)], dtype=float)
            elif ret == g.GLP_ENOPFS or st in (g.GLP_NOFEAS, g.GLP_INFEAS):
                reason = TerminationReason.INFEASIBLE
            elif ret == g.GLP_ENODFS or st == g.GLP_UNBND:
                reason = TerminationReason.INFEASIBLE_OR_UNBOUNDED if ret == g.GLP_ENODFS else TerminationReason.UNBOUNDED
            elif ret == g.GLP_ETMLIM:
                reason, limit = TerminationReason.NO_SOLUTION_FOUND, Limit.TIME
            else:
                reason = TerminationReason.ERROR
            if interrupted:
                reason, limit = interrupted_reason(reason, False)
                if reason is not TerminationReason.OPTIMAL:
                    x = duals = None
            detail = f"glp_simplex returned {ret}, status {st}"
        return self.result(model, reason, (t0, t1, t2), limit=limit, detail=detail, x=x, bound=bound, duals=duals)
