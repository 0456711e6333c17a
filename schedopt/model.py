"""``LinearModel``: a solver-agnostic linear / mixed-integer model built from whole arrays.

A model is a list of named **variable blocks** (an n-dimensional array of variables sharing a kind, with bounds
and optional labels per axis) and named **constraint families** (rows given as a sparse matrix over the blocks,
with lower and upper bounds and one label per row), plus a linear objective with a sense and a constant.

Nothing here loops in Python over single variables or rows: blocks and families are added from numpy /
scipy.sparse arrays, and :meth:`LinearModel.to_arrays` assembles the ``scipy.optimize.milp``-shaped form
(``c, A, row_lower, row_upper, col_lower, col_upper, integrality``) every backend consumes.
"""

from __future__ import annotations

import importlib
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InputError
from .structure import Structure


class LazyModule:
    """A module imported on its first attribute access, which then takes this placeholder's place in ``namespace``.

    Issue 42: ``import schedopt`` does not import ``scipy.sparse`` (about 0.15-0.2 s of CPU) until a model is built
    or read; the model and its exporters name it ``sp`` through this placeholder.

    Parameters
    ----------
    module : str
        The module's absolute name, e.g. ``"scipy.sparse"``.
    namespace : dict
        The globals of the module holding the placeholder.
    name : str
        The placeholder's name there: after the first access that name is the module itself.
    """

    def __init__(self, module: str, namespace: dict[str, Any], name: str) -> None:
        self._module, self._namespace, self._name = module, namespace, name

    def __getattr__(self, attr: str) -> Any:
        mod = importlib.import_module(self._module)
        if self._namespace.get(self._name) is self:
            self._namespace[self._name] = mod
        return getattr(mod, attr)


if TYPE_CHECKING:
    import scipy.sparse as sp
else:
    sp = LazyModule("scipy.sparse", globals(), "sp")

__all__ = ["MODEL_IO", "BlockParts", "ConstraintFamily", "FamilyParts", "LinearModel", "ModelArrays", "ModelParts",
           "VarBlock", "VarKind"]

INF = np.inf

#: the model's conversions to and from other tools and files, filled in by :mod:`schedopt.export` when it is imported
#: (``schedopt`` imports it): name -> function. The model imports no exporter; the exporters build on the model.
MODEL_IO: dict[str, Callable[..., Any]] = {}


def _io(name: str) -> Callable[..., Any]:
    fn = MODEL_IO.get(name)
    if fn is None:  # only when schedopt.model was loaded without the schedopt package (never through an import)
        raise RuntimeError(f"LinearModel.{name}: schedopt.export is not loaded (import schedopt)")
    return fn


# The neutral array form of a model (what readers of other tools return, what LinearModel.from_parts assembles).


@dataclass(frozen=True)
class BlockParts:
    """One variable block as plain arrays (the arguments of :meth:`LinearModel.add_variables`)."""

    name: str
    shape: int | tuple[int, ...]
    kind: str
    lower: np.ndarray
    upper: np.ndarray
    labels: Any = None


@dataclass(frozen=True)
class FamilyParts:
    """One constraint family as plain arrays (the arguments of :meth:`LinearModel.add_constraints`): ``coeffs``
    spans every column of the model, in block order."""

    name: str
    coeffs: sp.csr_matrix
    lower: np.ndarray
    upper: np.ndarray
    labels: list[str] | None = None


@dataclass(frozen=True)
class ModelParts:
    """A model read from another tool, as neutral arrays: what :meth:`LinearModel.from_parts` assembles."""

    name: str
    sense: str
    blocks: list[BlockParts] = field(default_factory=list)
    families: list[FamilyParts] = field(default_factory=list)
    objective: np.ndarray = field(default_factory=lambda: np.zeros(0))
    constant: float = 0.0



class VarKind(StrEnum):
    """Kind of a variable block."""

    CONTINUOUS = "continuous"
    INTEGER = "integer"
    BINARY = "binary"


@dataclass(frozen=True)
class VarBlock:
    """A named block of variables occupying columns ``start`` to ``start + size - 1`` of the model.

    ``labels`` holds one sequence of labels per axis (e.g. job ids and configuration names), or ``None``.
    """

    name: str
    shape: tuple[int, ...]
    start: int
    kind: VarKind
    labels: tuple[tuple[Any, ...], ...] | None = None

    @property
    def size(self) -> int:
        return int(math.prod(self.shape))

    @property
    def stop(self) -> int:
        return self.start + self.size

    @property
    def indices(self) -> np.ndarray:
        """Global column index of every variable, shaped like the block."""
        return np.arange(self.start, self.stop, dtype=np.int64).reshape(self.shape)

    def label_of(self, flat: int) -> str:
        """Readable name of the variable at flat position ``flat`` within the block."""
        idx = np.unravel_index(flat, self.shape) if self.shape else ()
        if self.labels is None:
            parts = [str(int(i)) for i in idx]
        else:
            parts = [str(self.labels[a][int(i)]) for a, i in enumerate(idx)]
        return f"{self.name}[{','.join(parts)}]" if parts else self.name


@dataclass(frozen=True)
class ConstraintFamily:
    """A named family of rows ``lower <= A x <= upper`` occupying rows ``start`` to ``start + size - 1``."""

    name: str
    start: int
    size: int
    labels: tuple[Any, ...] | None = None

    @property
    def stop(self) -> int:
        return self.start + self.size

    def label_of(self, row: int) -> str:
        if self.labels is None:
            return f"{self.name}[{row}]"
        return f"{self.name}[{self.labels[row]}]"


@dataclass(frozen=True)
class ModelArrays:
    """The plain array form of a model (the ``scipy.optimize.milp`` contract, objective as *minimize*-or-not).

    ``c`` is in the model's own sense (``maximize`` is kept, not negated); ``integrality`` is 0 for continuous
    and 1 for integer columns. ``A`` is CSR with ``num_cols`` columns.
    """

    c: np.ndarray
    A: sp.csr_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    integrality: np.ndarray
    maximize: bool
    constant: float

    @property
    def num_cols(self) -> int:
        return int(self.c.shape[0])

    @property
    def num_rows(self) -> int:
        return int(self.A.shape[0])

    @property
    def is_mip(self) -> bool:
        return bool(np.any(self.integrality))

    def csr_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(data, indices, indptr)`` of ``A`` (a model's array form that knows them without the matrix, such as
        the Sia round's, gives them without making it)."""
        A = self.A
        return A.data, A.indices, A.indptr

    def row_activity(self, x: np.ndarray) -> np.ndarray:
        """The rows' activities ``A @ x``."""
        return np.asarray(self.A @ x)

    def row_magnitude(self, ax: np.ndarray) -> np.ndarray:
        """``abs(A) @ ax``: the rows' magnitudes at ``ax`` (the absolute values of a point)."""
        return np.asarray(abs(self.A) @ ax)


#: the largest magnitude of a finite coefficient or bound: glpk, mathopt and pyomo take 1e20 and beyond as infinity
#: (or crash on it), so a finite value there would mean different models to different backends; use ±inf for "none"
MAX_MAGNITUDE = 1e20
#: nonzero coefficients below this magnitude are dropped (set to exactly 0): below every solver's tolerances, they
#: are noise to HiGHS (which drops |a| <= 1e-9 itself) and crash or mislead glpk (1e-200 aborts the interpreter)
TINY_COEFFICIENT = 1e-13
#: the most columns (or rows) one model may have: a bigger block is a typo (10**18 GPUs), not a model to allocate
MAX_SIZE = 50_000_000


def _numeric_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a float array; strings, None and other non-numbers are an :class:`InputError` naming ``name``
    (never half-converted: ``["1", "2"]`` is refused, not parsed)."""
    if value is None or isinstance(value, (str, bytes)):
        raise InputError(name, value, "must be numeric")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise InputError(name, value, f"must be a numeric array ({exc})") from None
    if raw.dtype.kind not in "biuf":
        raise InputError(name, value, f"must be numeric (got {raw.dtype.kind!r} data: strings, None or objects)")
    return raw.astype(np.float64, copy=False)


def _check_magnitude(name: str, arr: np.ndarray, *, allow_inf: bool) -> None:
    a = np.abs(arr)
    bad = (a >= MAX_MAGNITUDE) & (np.isfinite(a) if allow_inf else True)
    if bad.any():
        i = int(np.flatnonzero(np.ravel(bad))[0])
        hint = " (use ±inf for no bound)" if allow_inf else ""
        raise InputError(name, float(np.ravel(arr)[i]), f"magnitude must be below {MAX_MAGNITUDE:g}{hint}")


def _as_real(name: str, value: Any) -> float:
    """A finite real number (a bool, a string or None is refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(name, value, "must be a finite real number")
    try:
        out = float(value)
    except OverflowError:
        raise InputError(name, value, "must be a finite real number") from None
    if not math.isfinite(out) or abs(out) >= MAX_MAGNITUDE:
        raise InputError(name, value, f"must be a finite real number of magnitude below {MAX_MAGNITUDE:g}")
    return out


def _check_shape(name: str, shape: Any) -> tuple[int, ...]:
    def dim(s: Any) -> int:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            raise InputError(f"variables[{name}].shape", shape, "must be a non-negative integer or a tuple of them")
        return int(s)

    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shp: tuple[int, ...] = (int(shape),)
    elif isinstance(shape, (tuple, list)):
        shp = tuple(dim(s) for s in shape)
    else:
        shp = (dim(shape),)
    if any(s < 0 for s in shp):
        raise InputError(f"variables[{name}].shape", shp, "dimensions must be non-negative")
    if math.prod(shp) > MAX_SIZE:
        raise InputError(f"variables[{name}].shape", shp, f"more than {MAX_SIZE:,} variables in one block")
    return shp


def _as_float_array(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    arr = _numeric_array(name, value)
    try:
        arr = np.broadcast_to(arr, shape)
    except ValueError as exc:
        raise InputError(name, arr.shape, f"shape does not broadcast to {shape}") from exc
    if np.isnan(arr).any():
        bad = np.argwhere(np.isnan(arr))[0]
        raise InputError(name, float("nan"), f"contains NaN (first at index {tuple(int(i) for i in bad)})")
    return arr


def _plain_scalar(value: Any) -> float | None:
    """A Python float, or an int within int64, as the float64 the array path makes of it; ``None`` for NaN and for
    anything else (which takes the array path and its checks)."""
    tv = type(value)
    if tv is float or (tv is int and -(1 << 63) <= value < (1 << 63)):
        v = float(value)
        return v if v == v else None
    return None


def _scalar_bounds_ok(lo: float, up: float) -> bool:
    """Whether :func:`_check_bounds` passes on arrays whose entries all equal ``lo`` and ``up`` (so it need not
    run): no ``+inf`` lower or ``-inf`` upper, finite magnitudes below :data:`MAX_MAGNITUDE`, ``lo <= up``."""
    return (lo != INF and up != -INF and (abs(lo) < MAX_MAGNITUDE or lo == -INF)
            and (abs(up) < MAX_MAGNITUDE or up == INF) and not lo > up)


def _float_copy(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``_as_float_array(name, value, shape).ravel().copy()``: a new flat float64 array. A Python float (or int
    within int64) scalar and a float64 array of exactly ``shape`` without NaN take a direct path (the same values:
    the checks they skip cannot fail on them); anything else goes through :func:`_as_float_array`."""
    v = _plain_scalar(value)
    if v is not None:
        return np.full(math.prod(shape), v)
    if type(value) is np.ndarray and value.dtype == np.float64 and value.shape == shape and not np.isnan(value).any():
        return value.ravel().copy() if value.ndim != 1 else value.copy()
    return _as_float_array(name, value, shape).ravel().copy()


def _check_bounds(name: str, lower: np.ndarray, upper: np.ndarray) -> None:
    for side, arr, wrong in (("lower", lower, np.inf), ("upper", upper, -np.inf)):
        hit = arr == wrong
        if hit.any():
            i = int(np.flatnonzero(hit.ravel())[0])
            raise InputError(f"{name}.{side}", float(wrong), f"can never hold (index {i}); use {-wrong} for no bound")
        _check_magnitude(f"{name}.{side}", arr, allow_inf=True)
    bad = lower > upper
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise InputError(
            f"{name}.lower", float(lower.ravel()[i]), f"is greater than {name}.upper={float(upper.ravel()[i])} at index {i}"
        )


def _as_matrix(name: str, value: Any) -> sp.csr_matrix:
    """A 2-D numeric matrix (dense or scipy.sparse) as a CSR copy; None, scalars, 1-D or ragged lists, strings and
    objects are an :class:`InputError` naming ``name``."""
    if sp.issparse(value):
        if value.dtype.kind not in "biuf":
            raise InputError(name, value.dtype, "must be a numeric matrix")
        return sp.csr_matrix(value, dtype=np.float64, copy=True)
    arr = _numeric_array(name, value)
    if arr.ndim != 2:
        raise InputError(name, arr.shape, "must be a 2-D matrix (one row per constraint)")
    return sp.csr_matrix(arr)


def clean_csr_copy(value: Any, num_cols: int, owned: Any = None) -> sp.csr_matrix | None:
    """The direct path of a family's coefficients: for a ``scipy.sparse.csr_matrix`` with float64 data and int32
    indices in canonical form (sorted, no duplicates: what the problem builders hand over) whose data is finite,
    below :data:`MAX_MAGNITUDE` and holds no tiny nonzero, and with at most ``num_cols`` columns, the CSR copy the
    general path gives (the same data, indices and index pointers, widened to ``num_cols``), built with one
    construction; ``None`` for anything else (which then takes the general path, its checks and its messages).
    ``value is owned`` (a matrix handed over by :meth:`LinearModel._add_constraints_owned`) with ``num_cols``
    columns is returned itself, without the copy."""
    if type(value) is not sp.csr_matrix or value.dtype != np.float64 or value.shape[1] > num_cols:
        return None
    if value.indices.dtype != np.int32 or value.indptr.dtype != np.int32:
        return None
    data = value.data
    if data.size:
        a = np.abs(data)
        # NaN, inf and a huge value fail the first test, a tiny nonzero the second
        if not ((a < MAX_MAGNITUDE).all() and not ((a < TINY_COEFFICIENT) & (a != 0)).any()):
            return None
    if value is owned and value.shape[1] == num_cols:
        out = value
    else:
        out = sp.csr_matrix((data.copy(), value.indices.copy(), value.indptr.copy()), shape=(value.shape[0], num_cols))
    # canonical form read on the new matrix (computed there, as the general path's sum_duplicates does: a flag the
    # caller's matrix cached before its indices were changed in place is not trusted)
    return out if out.has_canonical_format else None


_INT32_MAX = int(np.iinfo(np.int32).max)


def stack_csr(mats: list[sp.csr_matrix], n: int,
              build: Callable[[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]], sp.csr_matrix] | None = None
              ) -> sp.csr_matrix:
    """``scipy.sparse.vstack(mats, format="csr")`` for CSR blocks of ``n`` columns: the same arrays (data, indices
    and index pointers concatenated, each block's pointers shifted by the entries before it) and the same final
    construction. Blocks with int32 indices take that direct path (vstack's own index type then is int32 too);
    others go through ``vstack``. ``build(data, indices, indptr, shape)`` makes the direct path's matrix (default:
    ``scipy.sparse.csr_matrix``; the Sia round's direct route passes :func:`schedopt.sia.build.canonical_csr`, which
    skips scipy's checks of arrays it knows canonical)."""
    nnz = sum(int(M.indptr[-1]) for M in mats)
    if nnz > _INT32_MAX or n > _INT32_MAX or any(
        M.indptr.dtype != np.int32 or M.indices.dtype != np.int32 or M.data.size != M.indptr[-1] for M in mats
    ):
        return sp.vstack(mats, format="csr")
    data = np.concatenate([M.data for M in mats])
    indices = np.concatenate([M.indices for M in mats])
    parts, offset = [], 0
    for M in mats:
        parts.append(M.indptr[:-1] + np.int32(offset))
        offset += int(M.indptr[-1])
    parts.append(np.array([offset], dtype=np.int32))
    indptr = np.concatenate(parts)
    shape = (sum(int(M.shape[0]) for M in mats), n)
    if build is not None:
        return build(data, indices, indptr, shape)
    return sp.csr_matrix((data, indices, indptr), shape=shape)


_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_name(kind: str, name: str, blocks: Mapping[str, Any], families: Mapping[str, Any]) -> None:
    """A new block's or family's name: an identifier, unique across the blocks *and* the families (pyomo, linopy and
    the LP/MPS writers put both in one namespace: a family named like a block was accepted, then refused on
    export)."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise InputError(f"{kind}.name", name, "must be an identifier (letters, digits, underscore)")
    if name in blocks or name in families:
        what = "a variable block" if name in blocks else "a constraint family"
        raise InputError(f"{kind}.name", name, f"is already used in this model (by {what}): names are unique "
                         "across blocks and families")


def _check_model_name(name: Any) -> str:
    if not isinstance(name, str):
        raise InputError("name", name, "must be a string")
    return name


class LinearModel:
    """A linear or mixed-integer linear model made of named variable blocks and constraint families.

    Examples
    --------
    >>> import schedopt
    >>> m = schedopt.LinearModel("knapsack", sense="maximize")
    >>> m.add_variables("x", 3, kind="binary", labels=["a", "b", "c"])
    VarBlock(name='x', shape=(3,), start=0, kind=<VarKind.BINARY: 'binary'>, labels=(('a', 'b', 'c'),))
    >>> m.add_constraints("weight", {"x": [[2, 3, 4]]}, upper=5)
    ConstraintFamily(name='weight', start=0, size=1, labels=None)
    >>> m.set_objective({"x": [3, 4, 5]})
    >>> print(m.summary())
    LinearModel 'knapsack' (maximize): 3 columns (3 integer) in 1 blocks, 1 rows in 1 families, 3 nonzeros
    >>> schedopt.solve(m).objective
    7.0
    """

    def __init__(self, name: str = "model", sense: str = "minimize",
                 structure: Structure | str = Structure.GENERAL) -> None:
        self.name = _check_model_name(name)
        self.structure = structure
        self._sense = self._parse_sense(sense)
        self.blocks: dict[str, VarBlock] = {}
        self.families: dict[str, ConstraintFamily] = {}
        self._col_lower: list[np.ndarray] = []
        self._col_upper: list[np.ndarray] = []
        self._col_int: list[np.ndarray] = []
        self._rows: list[sp.csr_matrix] = []
        self._row_lower: list[np.ndarray] = []
        self._row_upper: list[np.ndarray] = []
        self._c: dict[str, np.ndarray] = {}
        self.constant = 0.0
        self.num_cols = 0
        self.num_rows = 0
        self._cache: ModelArrays | None = None
        self._owned: sp.csr_matrix | None = None  # the matrix _add_constraints_owned is handing over, if any
        #: nonzero coefficients below ``TINY_COEFFICIENT`` dropped so far (rows and objective)
        self.dropped_coefficients = 0
        self._created = time.perf_counter()
        #: seconds spent building the model; set by problem builders (``None`` when unknown)
        self.build_seconds: float | None = None
        #: free-form notes; not read by the core (the structure tag is :attr:`structure`, typed)
        self.meta: dict[str, Any] = {}

    # -------------------------------------------------------------- structure
    @property
    def structure(self) -> Structure:
        """The structure tag solvers may exploit (:class:`schedopt.problem.Structure`; ``MCKP`` makes the ``mckp``
        backend the default). The tag is a hint: the ``mckp`` backend still checks the model itself."""
        return self._structure

    @structure.setter
    def structure(self, value: Structure | str) -> None:
        try:
            self._structure = Structure(value)
        except ValueError:
            raise InputError("structure", value, f"must be one of {[s.value for s in Structure]}") from None

    # ------------------------------------------------------------------ sense
    @staticmethod
    def _parse_sense(sense: str) -> str:
        if not isinstance(sense, str) or sense not in ("minimize", "maximize"):
            raise InputError("sense", sense, "must be 'minimize' or 'maximize'")
        return sense

    @property
    def sense(self) -> str:
        return self._sense

    @sense.setter
    def sense(self, value: str) -> None:
        self._sense = self._parse_sense(value)
        self._cache = None

    @property
    def maximize(self) -> bool:
        return self._sense == "maximize"

    # ------------------------------------------------------------- variables
    def add_variables(
        self,
        name: str,
        shape: int | Sequence[int],
        *,
        lower: Any = 0.0,
        upper: Any = INF,
        kind: str | VarKind = VarKind.CONTINUOUS,
        labels: Sequence[Any] | Sequence[Sequence[Any]] | None = None,
    ) -> VarBlock:
        """Add a block of variables of the given shape; bounds broadcast to the shape.

        ``kind`` is ``"continuous"``, ``"integer"`` or ``"binary"`` (binary clips the bounds to [0, 1]).
        ``labels``: for a 1-d block a sequence of labels; for an n-d block one sequence per axis.
        """
        _check_name("variables", name, self.blocks, self.families)
        shp = _check_shape(name, shape)
        if self.num_cols + math.prod(shp) > MAX_SIZE:
            raise InputError(f"variables[{name}].shape", shp, f"the model would have more than {MAX_SIZE:,} columns")
        try:
            vkind = VarKind(kind)
        except (TypeError, ValueError) as exc:
            raise InputError(f"variables[{name}].kind", kind, "must be continuous, integer or binary") from exc
        got = self._scalar_column_bounds(lower, upper, vkind, math.prod(shp))
        if got is not None:
            lo, up = got
        else:
            lo = _float_copy(f"variables[{name}].lower", lower, shp)
            up = _float_copy(f"variables[{name}].upper", upper, shp)
            if vkind is VarKind.BINARY:
                lo = np.maximum(lo, 0.0)
                up = np.minimum(up, 1.0)
            _check_bounds(f"variables[{name}]", lo, up)
            if vkind is not VarKind.CONTINUOUS:
                lo = np.ceil(lo - 1e-9)
                up = np.floor(up + 1e-9)
                _check_bounds(f"variables[{name}] (integer)", lo, up)
        lab = self._check_var_labels(name, shp, labels)
        block = VarBlock(name=name, shape=shp, start=self.num_cols, kind=vkind, labels=lab)
        self.blocks[name] = block
        self._col_lower.append(lo)
        self._col_upper.append(up)
        self._col_int.append(np.full(block.size, 0 if vkind is VarKind.CONTINUOUS else 1, dtype=np.uint8))
        self.num_cols += block.size
        self._cache = None
        return block

    @staticmethod
    def _scalar_column_bounds(lower: Any, upper: Any, vkind: VarKind, size: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The bounds :meth:`add_variables` computes, for plain scalar bounds that pass its checks: the same float64
        operations (binary clip, integer rounding) on the two scalars, then filled; ``None`` when a bound is no plain
        scalar or a check would fail (the array path then runs and raises as before)."""
        ls, us = _plain_scalar(lower), _plain_scalar(upper)
        if ls is None or us is None:
            return None
        lo, up = np.float64(ls), np.float64(us)
        if vkind is VarKind.BINARY:
            lo, up = np.maximum(lo, 0.0), np.minimum(up, 1.0)
        if not _scalar_bounds_ok(float(lo), float(up)):
            return None
        if vkind is not VarKind.CONTINUOUS:
            lo, up = np.ceil(lo - 1e-9), np.floor(up + 1e-9)
            if not _scalar_bounds_ok(float(lo), float(up)):
                return None
        return np.full(size, lo, dtype=np.float64), np.full(size, up, dtype=np.float64)

    @staticmethod
    def _check_var_labels(name: str, shp: tuple[int, ...], labels: Any) -> tuple[tuple[Any, ...], ...] | None:
        if labels is None:
            return None
        field = f"variables[{name}].labels"

        def seq(a: Any) -> tuple[Any, ...]:
            if isinstance(a, (str, bytes, Mapping)) or not isinstance(a, (Sequence, np.ndarray)):
                raise InputError(field, a, "must be a sequence of labels (a list or tuple, not a string)")
            return tuple(a)

        flat = seq(labels)
        if len(shp) == 1 and len(flat) == shp[0]:
            axes: tuple[tuple[Any, ...], ...] = (flat,)
        else:
            axes = tuple(seq(a) for a in flat)
        if len(axes) != len(shp) or any(len(a) != s for a, s in zip(axes, shp, strict=False)):
            raise InputError(field, [len(a) for a in axes], f"need one label sequence per axis of shape {shp}")
        for k, axis in enumerate(axes):
            try:
                distinct = len(set(axis))
            except TypeError:  # unhashable labels: not checked for duplicates
                continue
            if distinct != len(axis):
                seen: set[Any] = set()
                dup = None
                for a in axis:
                    if a in seen:
                        dup = a
                        break
                    seen.add(a)
                raise InputError(f"{field}[{k}]" if len(shp) > 1 else field, dup, "labels repeat: each must be unique")
        return axes

    def block_of(self, col: int) -> tuple[VarBlock, int]:
        """The block holding global column ``col`` and the flat position inside it."""
        for b in self.blocks.values():
            if b.start <= col < b.stop:
                return b, col - b.start
        raise InputError("col", col, f"out of range 0..{self.num_cols - 1}")

    # ----------------------------------------------------------- constraints
    def _coeff_matrix(self, family: str, coeffs: Any, nrows: int | None) -> sp.csr_matrix:
        """Turn ``coeffs`` (a matrix over all columns, or a dict block -> matrix over that block) into CSR."""
        if isinstance(coeffs, Mapping):
            parts = []
            for bname, mat in coeffs.items():
                if bname not in self.blocks:
                    raise InputError(f"constraints[{family}].coeffs", bname, "names no variable block")
                blk = self.blocks[bname]
                M = _as_matrix(f"constraints[{family}].coeffs[{bname}]", mat)
                if M.shape[1] != blk.size:
                    raise InputError(
                        f"constraints[{family}].coeffs[{bname}]", M.shape, f"needs {blk.size} columns (block size)"
                    )
                coo = M.tocoo()
                parts.append((coo.row, coo.col + blk.start, coo.data, M.shape[0]))
            if not parts:
                raise InputError(f"constraints[{family}].coeffs", coeffs, "is empty")
            rows = {p[3] for p in parts}
            if len(rows) != 1:
                raise InputError(f"constraints[{family}].coeffs", sorted(rows), "blocks disagree on the row count")
            m = rows.pop()
            r = np.concatenate([p[0] for p in parts])
            cidx = np.concatenate([p[1] for p in parts])
            v = np.concatenate([p[2] for p in parts])
            A = sp.csr_matrix((v, (r, cidx)), shape=(m, self.num_cols))
        else:
            # (getattr: a model unpickled from a version without _owned has none)
            A = clean_csr_copy(coeffs, self.num_cols, getattr(self, "_owned", None))
            if A is not None:
                if A.shape[0] > MAX_SIZE or self.num_rows + A.shape[0] > MAX_SIZE:
                    raise InputError(f"constraints[{family}].coeffs", A.shape,
                                     f"more than {MAX_SIZE:,} rows in the model")
                if nrows is not None and A.shape[0] != nrows:
                    raise InputError(f"constraints[{family}].coeffs", A.shape, f"row count differs from {nrows}")
                return A
            A = _as_matrix(f"constraints[{family}].coeffs", coeffs)
            if A.shape[1] > self.num_cols:
                raise InputError(
                    f"constraints[{family}].coeffs", A.shape, f"needs at most {self.num_cols} columns (the model's)"
                )
            if A.shape[1] < self.num_cols:
                A = sp.csr_matrix((A.data, A.indices, A.indptr), shape=(A.shape[0], self.num_cols))
        if A.nnz and not np.isfinite(A.data).all():
            raise InputError(f"constraints[{family}].coeffs", "non-finite", "contains NaN or inf")
        A.sum_duplicates()
        _check_magnitude(f"constraints[{family}].coeffs", A.data, allow_inf=False)
        tiny = (A.data != 0) & (np.abs(A.data) < TINY_COEFFICIENT)
        if tiny.any():
            A.data[tiny] = 0.0
            A.eliminate_zeros()
            self.dropped_coefficients += int(tiny.sum())
        if A.shape[0] > MAX_SIZE or self.num_rows + A.shape[0] > MAX_SIZE:
            raise InputError(f"constraints[{family}].coeffs", A.shape, f"more than {MAX_SIZE:,} rows in the model")
        if nrows is not None and A.shape[0] != nrows:
            raise InputError(f"constraints[{family}].coeffs", A.shape, f"row count differs from {nrows}")
        return A

    def add_constraints(
        self,
        name: str,
        coeffs: Any,
        *,
        lower: Any = -INF,
        upper: Any = INF,
        labels: Sequence[Any] | None = None,
    ) -> ConstraintFamily:
        """Add the family ``lower <= coeffs @ x <= upper``.

        ``coeffs`` is a (rows x model columns) array or sparse matrix, or a mapping from block name to a
        (rows x block size) matrix over that block's flattened variables.
        """
        _check_name("constraints", name, self.blocks, self.families)
        A = self._coeff_matrix(name, coeffs, None)
        m = A.shape[0]
        lo = _float_copy(f"constraints[{name}].lower", lower, (m,))
        up = _float_copy(f"constraints[{name}].upper", upper, (m,))
        ls, us = _plain_scalar(lower), _plain_scalar(upper)
        if m and (ls is None or us is None or not _scalar_bounds_ok(ls, us)):  # (no row: nothing can be wrong)
            _check_bounds(f"constraints[{name}]", lo, up)
        row_labels: tuple[Any, ...] | None = None
        if labels is not None:
            if isinstance(labels, (str, bytes, Mapping)) or not isinstance(labels, (Sequence, np.ndarray)):
                raise InputError(f"constraints[{name}].labels", labels,
                                 "must be a sequence of labels, one per row (a list or tuple, not a string or a scalar)")
            row_labels = tuple(labels)
            if len(row_labels) != m:
                raise InputError(f"constraints[{name}].labels", len(row_labels), f"need one label per row ({m})")
        fam = ConstraintFamily(name=name, start=self.num_rows, size=m, labels=row_labels)
        self.families[name] = fam
        self._rows.append(A)
        self._row_lower.append(lo)
        self._row_upper.append(up)
        self.num_rows += m
        self._cache = None
        return fam

    def _add_constraints_owned(self, name: str, coeffs: sp.csr_matrix, **kw: Any) -> ConstraintFamily:
        """:meth:`add_constraints` for a CSR matrix a problem builder made for this model and never touches again:
        when it takes the direct path (canonical float64 / int32, clean data, the model's width) the model keeps
        it as is instead of a copy; the family is the one :meth:`add_constraints` adds (same arrays, same checks
        and errors)."""
        self._owned = coeffs
        try:
            return self.add_constraints(name, coeffs, **kw)
        finally:
            self._owned = None

    # -------------------------------------------------------------- objective
    def set_objective(self, coeffs: Any, *, sense: str | None = None, constant: float = 0.0) -> None:
        """Set the linear objective: a mapping block -> coefficients (shaped like the block) or a full vector."""
        if sense is not None:
            self.sense = sense
        self._c = {}
        if coeffs is None:
            raise InputError("objective", coeffs, "needs coefficients (a mapping block -> values, or a full vector)")
        if isinstance(coeffs, Mapping):
            for bname, vec in coeffs.items():
                if not isinstance(bname, str) or bname not in self.blocks:
                    raise InputError("objective", bname, "names no variable block")
                blk = self.blocks[bname]
                self._c[bname] = _float_copy(f"objective[{bname}]", vec, blk.shape)
        else:
            full = _as_float_array("objective", coeffs, (self.num_cols,))
            for b in self.blocks.values():
                self._c[b.name] = full[b.start : b.stop].copy()
        self.constant = _as_real("objective.constant", constant)
        for bname, vec in self._c.items():
            if not np.isfinite(vec).all():
                raise InputError(f"objective[{bname}]", "inf", "coefficients must be finite")
            _check_magnitude(f"objective[{bname}]", vec, allow_inf=False)
            tiny = (vec != 0) & (np.abs(vec) < TINY_COEFFICIENT)
            if tiny.any():
                vec[tiny] = 0.0
                self.dropped_coefficients += int(tiny.sum())
        self._cache = None

    # ---------------------------------------------------------------- arrays
    def to_arrays(self) -> ModelArrays:
        """The assembled array form (cached until the model changes)."""
        if self._cache is not None:
            return self._cache
        n = self.num_cols
        c = np.zeros(n)
        for bname, vec in self._c.items():
            b = self.blocks[bname]
            c[b.start : b.stop] = vec
        if self._rows:
            mats = [
                A if A.shape[1] == n else sp.csr_matrix((A.data, A.indices, A.indptr), shape=(A.shape[0], n))
                for A in self._rows
            ]
            A = stack_csr(mats, n)
            rl = np.concatenate(self._row_lower)
            ru = np.concatenate(self._row_upper)
        else:
            A = sp.csr_matrix((0, n))
            rl = np.zeros(0)
            ru = np.zeros(0)
        cat = np.concatenate
        self._cache = ModelArrays(
            c=c,
            A=A,
            row_lower=rl,
            row_upper=ru,
            col_lower=cat(self._col_lower) if self._col_lower else np.zeros(0),
            col_upper=cat(self._col_upper) if self._col_upper else np.zeros(0),
            integrality=cat(self._col_int) if self._col_int else np.zeros(0, dtype=np.uint8),
            maximize=self.maximize,
            constant=self.constant,
        )
        return self._cache

    @classmethod
    def from_arrays(
        cls,
        c: Any,
        A: Any = None,
        row_lower: Any = -INF,
        row_upper: Any = INF,
        col_lower: Any = 0.0,
        col_upper: Any = INF,
        integrality: Any = 0,
        sense: str = "minimize",
        constant: float = 0.0,
        name: str = "model",
    ) -> LinearModel:
        """Build a model from the ``scipy.optimize.milp`` array shape: one block ``x`` and one family ``rows``.

        ``integrality`` is 0 (continuous) or 1 (integer) per column, or a scalar.
        """
        cvec = _numeric_array("c", c)
        if cvec.ndim != 1:
            raise InputError("c", cvec.shape, "must be one-dimensional")
        n = cvec.shape[0]
        if n > MAX_SIZE:
            raise InputError("c", n, f"more than {MAX_SIZE:,} columns")
        integ_raw = _numeric_array("integrality", integrality)
        try:
            integ = np.broadcast_to(integ_raw, (n,))
        except ValueError:
            raise InputError("integrality", integ_raw.shape, f"needs one entry per column ({n}) or a scalar") from None
        if not np.isin(integ, (0, 1)).all():
            raise InputError("integrality", integrality, "entries must be 0 (continuous) or 1 (integer)")
        m = cls(name="model" if name is None else name, sense=sense)
        lo = _as_float_array("col_lower", col_lower, (n,))
        up = _as_float_array("col_upper", col_upper, (n,))
        _check_bounds("col", lo, up)
        # one block per integrality kind would reorder columns; instead add integer columns via a mask
        m.add_variables("x", n, lower=lo, upper=up, kind="continuous")
        if integ.any():
            m._col_int[0] = integ.astype(np.uint8).copy()
            m._col_lower[0] = np.where(integ == 1, np.ceil(lo - 1e-9), lo)
            m._col_upper[0] = np.where(integ == 1, np.floor(up + 1e-9), up)
            _check_bounds("col (integer)", m._col_lower[0], m._col_upper[0])
        if A is not None:
            Am = _as_matrix("A", A)
            if Am.shape[1] != n:
                raise InputError("A", Am.shape, f"needs {n} columns (len(c))")
            m.add_constraints("rows", Am, lower=row_lower, upper=row_upper)
        m.set_objective(cvec, constant=constant)
        return m

    # -------------------------------------------------------------- utility
    def copy(self) -> LinearModel:
        """A deep copy (arrays copied)."""
        other = LinearModel(self.name, self._sense)
        other.blocks = dict(self.blocks)
        other.families = dict(self.families)
        other._col_lower = [a.copy() for a in self._col_lower]
        other._col_upper = [a.copy() for a in self._col_upper]
        other._col_int = [a.copy() for a in self._col_int]
        other._rows = [a.copy() for a in self._rows]
        other._row_lower = [a.copy() for a in self._row_lower]
        other._row_upper = [a.copy() for a in self._row_upper]
        other._c = {k: v.copy() for k, v in self._c.items()}
        other.constant = self.constant
        other.num_cols = self.num_cols
        other.num_rows = self.num_rows
        other.build_seconds = self.build_seconds
        other.meta = dict(self.meta)
        other.dropped_coefficients = self.dropped_coefficients
        other._structure = self._structure
        return other

    def relax(self) -> LinearModel:
        """The LP relaxation (every column continuous, bounds kept; structure GENERAL: an LP is no longer in a
        binary family such as MCKP, and the legacy ``meta["structure"]`` tag is dropped with it)."""
        other = self.copy()
        other._col_int = [np.zeros_like(a) for a in other._col_int]
        other.name = f"{self.name}_relaxed"
        other._structure = Structure.GENERAL
        other.meta.pop("structure", None)
        return other

    def set_bounds(self, block: str, lower: Any = None, upper: Any = None) -> None:
        """Replace a block's bounds (broadcast to its shape)."""
        if block not in self.blocks:
            raise InputError("block", block, "names no variable block")
        b = self.blocks[block]
        i = list(self.blocks).index(block)
        if lower is not None:
            self._col_lower[i] = _as_float_array(f"variables[{block}].lower", lower, b.shape).ravel().copy()
        if upper is not None:
            self._col_upper[i] = _as_float_array(f"variables[{block}].upper", upper, b.shape).ravel().copy()
        _check_bounds(f"variables[{block}]", self._col_lower[i], self._col_upper[i])
        self._cache = None

    def family_rows(self, name: str) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
        """The rows, lower and upper bounds of one constraint family."""
        if name not in self.families:
            raise InputError("family", name, "names no constraint family")
        i = list(self.families).index(name)
        A = self._rows[i]
        if A.shape[1] != self.num_cols:
            A = sp.csr_matrix((A.data, A.indices, A.indptr), shape=(A.shape[0], self.num_cols))
        return A, self._row_lower[i], self._row_upper[i]

    def without_families(self, names: Sequence[str]) -> LinearModel:
        """A copy with the named constraint families removed (used by infeasibility analysis)."""
        drop = set(names)
        unknown = drop - set(self.families)
        if unknown:
            raise InputError("families", sorted(unknown), "name no constraint family")
        other = self.copy()
        keep = [i for i, f in enumerate(self.families) if f not in drop]
        fams = list(self.families.values())
        other._rows = [other._rows[i] for i in keep]
        other._row_lower = [other._row_lower[i] for i in keep]
        other._row_upper = [other._row_upper[i] for i in keep]
        other.families = {}
        start = 0
        for i in keep:
            f = fams[i]
            other.families[f.name] = ConstraintFamily(f.name, start, f.size, f.labels)
            start += f.size
        other.num_rows = start
        return other

    def evaluate(self, x: np.ndarray) -> float:
        """Objective value of the full column vector ``x``."""
        arr = self.to_arrays()
        return float(arr.c @ np.asarray(x, dtype=np.float64) + arr.constant)

    def violations(self, x: np.ndarray, tol: float = 1e-6) -> dict[str, float]:
        """Largest violation per family (and ``bounds``/``integrality``) of ``x``; empty when feasible."""
        arr = self.to_arrays()
        x = np.asarray(x, dtype=np.float64)
        out: dict[str, float] = {}
        act = arr.A @ x if arr.num_rows else np.zeros(0)
        viol = np.maximum(arr.row_lower - act, act - arr.row_upper)
        for f in self.families.values():
            if f.size:
                v = float(viol[f.start : f.stop].max())
                if v > tol:
                    out[f.name] = v
        bv = float(np.max(np.maximum(arr.col_lower - x, x - arr.col_upper), initial=0.0))
        if bv > tol:
            out["bounds"] = bv
        iv = float(np.max(np.abs(x - np.round(x))[arr.integrality == 1], initial=0.0))
        if iv > tol:
            out["integrality"] = iv
        return out

    def column_names(self) -> list[str]:
        """Readable, solver-safe names of every column (``x(job1,cfg3)``)."""
        names: list[str] = []
        for b in self.blocks.values():
            if b.labels is None and b.size > 0:
                idx = np.indices(b.shape).reshape(len(b.shape), -1).T if b.shape else np.zeros((1, 0), int)
                names.extend(_safe(f"{b.name}({','.join(map(str, row))})") for row in idx)
            else:
                names.extend(_safe(b.label_of(i).replace("[", "(").replace("]", ")")) for i in range(b.size))
        return names

    def row_names(self) -> list[str]:
        names: list[str] = []
        for f in self.families.values():
            names.extend(_safe(f.label_of(i).replace("[", "(").replace("]", ")")) for i in range(f.size))
        return names

    def write_lp(self, path: str) -> None:
        """Write the model in CPLEX LP format with readable names (via HiGHS; :func:`schedopt.export.write_lp`)."""
        _io("write_lp")(self, path)

    def write_mps(self, path: str) -> None:
        """Write the model in (free) MPS format with readable names (via HiGHS; :func:`schedopt.export.write_mps`)."""
        _io("write_mps")(self, path)

    @classmethod
    def from_parts(cls, parts: ModelParts) -> LinearModel:
        """Assemble a model from neutral arrays (a :class:`schedopt.export.ModelParts`, what the readers return):
        its blocks and families in order, then the objective."""
        m = cls(parts.name, parts.sense)
        for b in parts.blocks:
            m.add_variables(b.name, b.shape, kind=b.kind, lower=b.lower, upper=b.upper, labels=b.labels)
        for f in parts.families:
            m.add_constraints(f.name, f.coeffs, lower=f.lower, upper=f.upper, labels=f.labels)
        m.set_objective(parts.objective, constant=parts.constant)
        return m

    @classmethod
    def read_mps(cls, path: str, name: str | None = None) -> LinearModel:
        """Read a (free or fixed) MPS file through HiGHS; the names ``write_mps`` gives rebuild the blocks and
        families (:func:`schedopt.export.read_model_parts`)."""
        return cls.from_parts(_io("read_model_parts")(path, name))

    @classmethod
    def read_lp(cls, path: str, name: str | None = None) -> LinearModel:
        """Read a CPLEX LP file through HiGHS (:func:`schedopt.export.read_model_parts`)."""
        return cls.from_parts(_io("read_model_parts")(path, name))

    def to_linopy(self) -> Any:
        """A ``linopy.Model`` with one variable per block (dimensions named after the block's axes, coordinates its
        labels) and one constraint per family (:func:`schedopt.export.to_linopy`). Needs linopy."""
        return _io("to_linopy")(self)

    @classmethod
    def from_linopy(cls, lm: Any, name: str = "model") -> LinearModel:
        """A :class:`LinearModel` from a ``linopy.Model`` (:func:`schedopt.export.linopy_parts`)."""
        return cls.from_parts(_io("linopy_parts")(lm, name))

    def to_pyomo(self) -> Any:
        """A real pyomo ``ConcreteModel``: one indexed ``Var`` per block and one indexed ``Constraint`` per family,
        named after them, and ``objective`` (:func:`schedopt.export.to_pyomo`). Needs pyomo."""
        return _io("to_pyomo")(self)

    def summary(self) -> str:
        arr = self.to_arrays()
        nint = int(arr.integrality.sum())
        return (
            f"LinearModel {self.name!r} ({self.sense}): {self.num_cols} columns ({nint} integer) in "
            f"{len(self.blocks)} blocks, {self.num_rows} rows in {len(self.families)} families, {arr.A.nnz} nonzeros"
        )

    def __repr__(self) -> str:
        return f"<{self.summary()}>"


_SAFE = re.compile(r"[^A-Za-z0-9_(),.!\"#$%&/;?@`'{}|~]")


def _safe(name: str) -> str:
    s = _SAFE.sub("_", name)
    if s and (s[0].isdigit() or s[0] == "."):
        s = "_" + s
    return s
