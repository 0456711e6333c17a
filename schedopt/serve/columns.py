"""Progress reports in columns: one ``JobProgressBatch`` document in an event batch stands for many
:class:`~schedopt.live.JobProgress` events, one per row, in order.

A cluster of 2,048 GPUs reports about 4,096 ``JobProgress`` events a round; as separate JSON objects they take
about 14 ms to parse and 22 ms to check (CPU, Python's own ``json`` and one pass of plain comparisons). In columns
-- ``{"type": "JobProgressBatch", "job_id": [...], "time": [...] or one number, "progress": [...], ...}`` -- JSON
reads lists of numbers in C and each column is checked at once with numpy. A column left out, or ``null`` in a
row, is a field left out of that row's event (left unchanged), as in ``JobProgress``. The measurements, one list a
row, may come in columns too: ``{"row": [...], "gpu_type": [...], "nodes": [...], ...}``, the row of each
measurement (in order) and one column a field of :class:`~schedopt.live.Measurement` (``sync_time`` may be left
out); at 2,048 GPUs a sia round reports about 3,600 measurements, 464 KB of the body as objects, read and checked
in about half the time as columns (:func:`measurement_rows` turns them into the list form, for the errors).

The checks are those of :func:`schedopt.live.event_from_dict` and the event's own; a column that does not pass
them at once (a wrong type, a value out of range) is read row by row by that general route, whose error names
the field with the row: ``events[2].epoch[17]``. Whatever this route accepts, the general route accepts as the
same events (tests/test_serve_events.py checks both). :func:`schedopt.live.client.event_documents` writes
these documents (:class:`schedopt.live.ServiceSession` sends a round's progress reports so).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..errors import InputError
from ..live import event_from_dict
from ..live.session import MeasuredPair
from ..live.state import JobProgress, Measurement
from .events import BAD_NAME, measurement_of

__all__ = ["COLUMNS", "MEASUREMENT_COLUMNS", "PROGRESS_BATCH", "TOO_LARGE", "ProgressColumns", "measurement_rows",
           "progress_batch", "progress_columns", "row_field"]

#: The ``type`` of a columnar progress document.
PROGRESS_BATCH = "JobProgressBatch"
#: Its columns: ``JobProgress``'s fields.
COLUMNS = ("time", "job_id", "progress", "epoch", "local_batch", "accumulation", "attained_gpu_seconds",
           "measurements", "grad_sqr", "grad_var")
_FLOATS = {"progress": (0.0, 1.0), "attained_gpu_seconds": (0.0, math.inf), "grad_sqr": (0.0, math.inf),
           "grad_var": (0.0, math.inf)}  # [low, high): null allowed
_INTS = {"epoch": (0, 2**20), "local_batch": (1, 2**31), "accumulation": (0, 2**20)}  # [low, high]: null allowed
_NUMBER = frozenset({int, float})
_NULL = type(None)
#: the message of an event holding an integer too large to read as a number
TOO_LARGE = "holds an integer too large for a number (beyond 1.8e308)"


def _floats(col: list[Any], low: float, high: float, nullable: bool,
            kinds: set[type] | None = None) -> list[float | None] | None:
    """``col`` as floats (None for null) when every value passes; None when one may not. ``kinds``: the types of
    ``col``'s values, when the caller has them already. A column of floats (and nulls) passes as it is: the same
    values; integers are turned into floats."""
    got = _float_array(col, low, high, nullable, kinds)
    return None if got is None else got[0]


def _float_array(col: list[Any], low: float, high: float, nullable: bool, kinds: set[type] | None = None
                 ) -> tuple[list[float | None], np.ndarray[Any, np.dtype[np.float64]]] | None:
    """:func:`_floats`'s values and the array of them it checked (NaN for null)."""
    if kinds is None:
        kinds = set(map(type, col))
    if not kinds <= (_NUMBER | {type(None)} if nullable else _NUMBER):
        return None
    try:
        a = np.array(col, dtype=np.float64)
    except (OverflowError, TypeError, ValueError):
        return None
    null = np.isnan(a)  # a null, or a NaN a caller put in (JSON has none): only nulls pass
    ok = (a >= low) & (a < high)
    if nullable:
        if int(null.sum()) != (col.count(None) if _NULL in kinds else 0):
            return None
        ok |= null
    if not bool(ok.all()):
        return None
    if int not in kinds:
        return col, a  # floats and nulls only: as they are (no list made again)
    values: list[Any] = a.tolist()
    if null.any():
        for k in np.flatnonzero(null).tolist():
            values[k] = None
    return values, a


def _ints(col: list[Any], low: int, high: int) -> bool:
    """Whether every value of ``col`` is null or an integer in [low, high] (a bool is no integer here): the types
    in one pass of C, then the range of the distinct values (a round's columns hold a few: no list made)."""
    kinds = set(map(type, col))
    if not kinds <= _INT_OR_NULL:
        return False
    values = set(col)  # (integers and None only: no bool or float equal to an integer merges into one)
    values.discard(None)
    return not values or (min(values) >= low and max(values) <= high)


_INT_OR_NULL = {int, type(None)}


#: names that passed :func:`_names` (a pure check of each string): the same job ids and GPU types come every
#: round, and a set lookup is ~10x cheaper than the check; emptied when it holds more than :data:`_NAMES_HELD`
_NAMES_OK: set[str] = set()
_NAMES_HELD = 200_000


def _names(col: list[Any]) -> bool:
    """Whether every value of ``col`` is a name (a string of 1 to 253 characters without the characters
    ``BAD_NAME`` refuses), as :class:`~schedopt.live.JobProgress` and :class:`~schedopt.live.Measurement` check."""
    try:
        if _NAMES_OK.issuperset(col):
            return True
    except TypeError:  # a list or an object in the column: no name
        return False
    if not (set(map(type, col)) <= {str} and (not col or (min(map(len, col)) > 0 and max(map(len, col)) <= 253))
            and BAD_NAME.search("\n".join(col)) is None):
        return False
    if len(_NAMES_OK) + len(col) > _NAMES_HELD:
        _NAMES_OK.clear()
    _NAMES_OK.update(col)
    return True


_M_FIELDS = ("gpu_type", "nodes", "gpus", "local_batch", "step_time", "sync_time")
_M_REQUIRED = _M_FIELDS[:5]
_M_KEYS = frozenset(_M_FIELDS)


def _measurements_at_once(col: list[Any]) -> list[tuple[MeasuredPair, ...]] | None:
    """The measurements column (a list a row) checked field by field over all its rows at once (numpy), as
    :func:`~schedopt.serve.events.measurement_of` checks one; None when one may not pass (then one by one)."""
    flat: list[Any] = []
    counts = []
    for ms in col:
        if ms is None:
            counts.append(0)
        elif type(ms) is list:
            counts.append(len(ms))
            flat.extend(ms)
        else:
            return None
    if not flat:
        return [()] * len(col)
    if set(map(type, flat)) != {dict} or not all(map(_M_KEYS.issuperset, flat)):
        return None
    try:
        gpu_type, nodes, gpus, local_batch, step_time = ([d[k] for d in flat] for k in _M_REQUIRED)
    except KeyError:
        return None
    return _measurement_pairs(gpu_type, nodes, gpus, local_batch, step_time,
                                [d.get("sync_time", 0.0) for d in flat],
                                np.repeat(np.arange(len(col)), counts).tolist(), len(col))


def _measurement_pairs(gpu_type: list[Any], nodes: list[Any], gpus: list[Any], local_batch: list[Any],
                       step_time: list[Any], sync_time: list[Any], rows: list[int], n: int
                       ) -> list[tuple[MeasuredPair, ...]] | None:
    """The measurements of the fields' columns (one value a measurement; ``rows``: the row of each, in order, of
    ``n`` rows), one tuple a row of ``(Measurement.key, (step_time, sync_time))`` pairs, when every value passes
    :class:`~schedopt.live.Measurement`'s checks; None when one may not."""
    if not (set(map(type, nodes)) | set(map(type, gpus)) | set(map(type, local_batch))) <= {int} or not _names(
            gpu_type):
        return None
    step_kinds, sync_kinds = set(map(type, step_time)), set(map(type, sync_time))
    step_checked = _float_array(step_time, 0.0, math.inf, nullable=False, kinds=step_kinds)
    sync_checked = _float_array(sync_time, 0.0, math.inf, nullable=False, kinds=sync_kinds)
    if step_checked is None or sync_checked is None or (int in step_kinds | sync_kinds and any(
            type(v) is int and v >= 2**1023 for v in (*step_time, *sync_time))):
        return None  # (events._number: an integer from 2**1023 on goes the general route)
    try:  # (integers only, checked above: exact as int64; one beyond it is out of range anyway)
        nd, g, lb = (np.array(c, dtype=np.int64) for c in (nodes, gpus, local_batch))
    except OverflowError:
        return None
    (step, st), (sync, sy) = step_checked, sync_checked  # (the arrays checked: no second conversion)
    if not bool(((nd >= 1) & (nd <= 2**20) & (g >= nd) & (g <= 2**20) & (lb >= 1) & (lb <= 2**31) & (st > 0)
                 & (sy < st)).all()):
        return None
    out: list[tuple[MeasuredPair, ...]] = [()] * n
    # checked above: Measurement's own checks, done at once; each as the session keeps it, (key, (step, sync)):
    # no Measurement object made (a quarter of the time, made and taken in)
    pairs: Any = zip(zip(gpu_type, nodes, gpus, local_batch), zip(step, sync))  # (the types checked above)
    for r, m in zip(rows, pairs):
        got = out[r]
        out[r] = (*got, m) if got else (m,)  # rows in order: a row's measurements in their order
    return out


#: the columns of the measurements in columns: the row of each measurement, then :class:`~schedopt.live.Measurement`'s
#: fields (``sync_time`` may be left out: 0 for every one)
MEASUREMENT_COLUMNS = ("row", *_M_FIELDS)


def _measurement_columns(col: dict[str, Any], n: int) -> list[tuple[MeasuredPair, ...]] | None:
    """The measurements in columns (``{"row": [...], "gpu_type": [...], ...}``) checked at once, as one tuple a row;
    None when one may not pass (then :func:`measurement_rows` and the general route name it)."""
    if not set(col) <= set(MEASUREMENT_COLUMNS) or not all(k in col for k in MEASUREMENT_COLUMNS[:-1]):
        return None
    rows = col["row"]
    if type(rows) is not list or any(type(v) is not list or len(v) != len(rows) for v in col.values()):
        return None
    if not rows:
        return [()] * n
    if set(map(type, rows)) != {int}:
        return None
    try:
        r = np.array(rows, dtype=np.int64)
    except OverflowError:
        return None
    if r[0] < 0 or r[-1] >= n or bool((np.diff(r) < 0).any()):
        return None
    sync = col.get("sync_time")
    return _measurement_pairs(col["gpu_type"], col["nodes"], col["gpus"], col["local_batch"], col["step_time"],
                                [0.0] * len(rows) if sync is None else sync, rows, n)


def _shape(d: dict[str, Any], path: str, known: tuple[str, ...], required: tuple[str, ...], what: str,
           key: tuple[str, str]) -> None:
    """Every key of ``d`` is one of ``known`` (a ``what``), every one of ``required`` is there, and the column
    ``key[0]`` (whose values are ``key[1]``) is a list; else an InputError naming ``{path}.{key}``."""
    for k in d:
        if k not in known:
            raise InputError(f"{path}.{k}", d[k], f"is not a {what} (known: {', '.join(known)})")
    for k in required:
        if k not in d:
            raise InputError(f"{path}.{k}", None, "is required")
    if type(d[key[0]]) is not list:
        raise InputError(f"{path}.{key[0]}", d[key[0]], f"must be a list ({key[1]})")


def measurement_rows(col: Any, n: int, path: str) -> list[list[dict[str, Any]] | None]:
    """The measurements in columns at ``path`` (an object: ``row``, the row of each measurement, in order, then one
    column a field of :class:`~schedopt.live.Measurement`) as the list form, one list of measurement documents a
    row (None: none); a malformed object is an :class:`~schedopt.errors.InputError` naming ``{path}.{column}``."""
    if type(col) is not dict:
        raise InputError(path, col, f"must be a list of {n} values (one a row, as job_id) or an object of columns "
                                    f"({', '.join(MEASUREMENT_COLUMNS)})")
    _shape(col, path, MEASUREMENT_COLUMNS, MEASUREMENT_COLUMNS[:-1], "measurement column",
           ("row", "the row of each measurement"))
    rows = col["row"]
    m = len(rows)
    for k, v in col.items():
        if type(v) is not list or len(v) != m:
            raise InputError(f"{path}.{k}", v if type(v) is not list else len(v),
                             f"must be a list of {m} values (one a measurement, as row)")
    last = 0
    for i, r in enumerate(rows):
        if type(r) is not int or not last <= r < n:
            raise InputError(f"{path}.row[{i}]", r, f"must be a row index in [{last}, {n}) (rows in order)")
        last = r
    out: list[list[dict[str, Any]] | None] = [None] * n
    keys = [k for k in MEASUREMENT_COLUMNS[1:] if k in col]
    for i, r in enumerate(rows):
        got = out[r]
        if got is None:
            got = out[r] = []
        got.append({k: col[k][i] for k in keys})
    return out


def _measurements(col: list[Any] | dict[str, Any], n: int) -> list[tuple[MeasuredPair, ...]] | None:
    """The measurements column, one tuple a row of (key, (step time, sync time)) pairs (:data:`MeasuredPair`),
    when every value passes; None when one may not."""
    if type(col) is dict:
        return _measurement_columns(col, n)
    assert type(col) is list
    at_once = _measurements_at_once(col)
    if at_once is not None:
        return at_once
    out: list[tuple[MeasuredPair, ...]] = []
    for ms in col:
        if ms is None or ms == []:
            out.append(())
            continue
        if type(ms) is not list:
            return None
        row = [measurement_of(m) for m in ms]
        got = tuple((m.key, (m.step_time, m.sync_time)) for m in row if m is not None)
        if len(got) != len(row):
            return None
        out.append(got)
    return out


def measurement_of_pair(pair: MeasuredPair) -> Measurement:
    """The :class:`~schedopt.live.Measurement` of a checked (key, (step time, sync time)) pair (no checks run
    again: the pair passed them)."""
    m = object.__new__(Measurement)
    d = m.__dict__
    (d["gpu_type"], d["nodes"], d["gpus"], d["local_batch"]), (d["step_time"], d["sync_time"]) = pair
    return m


def _paired(a: list[Any], b: list[Any]) -> bool:
    """Whether each row of the columns ``a`` and ``b`` has both values or neither (in C when neither column has a
    null, or both have only nulls). Their values checked before: besides nulls, one type in both (integers, or
    floats), so the rows' types are equal exactly where both or neither is null (about half the CPU of comparing
    where each is None)."""
    nulls = a.count(None), b.count(None)
    if nulls == (0, 0) or nulls == (len(a), len(b)):
        return True
    return nulls[0] == nulls[1] and list(map(type, a)) == list(map(type, b))


def _fast(d: dict[str, Any], n: int) -> ProgressColumns | None:
    ids = d["job_id"]
    t = d["time"]
    checked = _floats(t if type(t) is list else [t], 0.0, math.inf, nullable=False)
    if checked is None or not _names(ids):
        return None
    times = cast("list[float]", checked) if type(t) is list else cast(float, checked[0])
    floats: dict[str, list[float | None]] = {}
    for k, (low, high) in _FLOATS.items():
        if k in d:
            v = _floats(d[k], low, high, nullable=True)
            if v is None:
                return None
            floats[k] = v
    for k, (low, high) in _INTS.items():
        if k in d and not _ints(d[k], low, high):
            return None
    none = [None] * n
    for a, b in ((d.get("local_batch"), d.get("accumulation")), (floats.get("grad_sqr"), floats.get("grad_var"))):
        if (a is not None or b is not None) and not _paired(none if a is None else a, none if b is None else b):
            return None  # one of a pair without the other: the general route says which
    ms = None
    if "measurements" in d:
        ms = _measurements(d["measurements"], n)
        if ms is None:
            return None
    return ProgressColumns(times, ids, floats.get("progress"), d.get("epoch"), ms, d.get("local_batch"),
                           d.get("accumulation"), floats.get("attained_gpu_seconds"), floats.get("grad_sqr"),
                           floats.get("grad_var"))


_FIELDS = ("time", "job_id", "progress", "epoch", "measurements", "local_batch", "accumulation",
           "attained_gpu_seconds", "grad_sqr", "grad_var")


@dataclass(frozen=True)
class ProgressColumns:
    """A ``JobProgressBatch`` whose every value passed ``JobProgress``'s checks: its columns (None: a column left
    out), for :meth:`schedopt.live.Session.apply_progress` with ``checked=True`` (no event object a row); the
    measurements as ``measured``, each row's (key, (step time, sync time)) pairs (no object a measurement:
    :attr:`measurements` makes them)."""

    time: float | list[float]
    job_id: list[str]
    progress: list[float | None] | None
    epoch: list[int | None] | None
    measured: list[tuple[MeasuredPair, ...]] | None
    local_batch: list[int | None] | None
    accumulation: list[int | None] | None
    attained_gpu_seconds: list[float | None] | None
    grad_sqr: list[float | None] | None
    grad_var: list[float | None] | None

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def measurements(self) -> list[tuple[Measurement, ...]] | None:
        """The measurements column as :class:`~schedopt.live.Measurement` objects, one tuple a row."""
        if self.measured is None:
            return None
        return [tuple(map(measurement_of_pair, row)) for row in self.measured]

    def events(self) -> list[JobProgress]:
        """The rows as ``JobProgress`` events, in order."""
        n = len(self.job_id)
        none: list[Any] = [None] * n
        out = []
        new = object.__new__
        cols = [none if c is None else c for c in (getattr(self, f) for f in _FIELDS)]
        if self.measured is None:
            cols[4] = [()] * n
        if not isinstance(self.time, list):
            cols[0] = [self.time] * n
        for row in zip(*cols):
            e = new(JobProgress)
            e.__dict__.update(zip(_FIELDS, row))  # checked: the frozen dataclass's own checks, done at once
            out.append(e)
        return out


def _row(d: dict[str, Any], r: int) -> dict[str, Any]:
    """Row ``r`` as a ``JobProgress`` document (null values left out)."""
    row: dict[str, Any] = {"type": "JobProgress"}
    for k in COLUMNS:
        if k not in d:
            continue
        v = d[k] if k == "time" and type(d[k]) is not list else d[k][r]
        if v is not None:
            row[k] = v
    return row


def _slow(d: dict[str, Any], n: int, path: str) -> list[Any]:
    """Row by row through :func:`schedopt.live.event_from_dict`; its error names the column and the row (the
    measurements in columns as their rows: ``measurements[row][k]``, the row's ``k``-th)."""
    if type(d.get("measurements")) is dict:
        d = {**d, "measurements": measurement_rows(d["measurements"], n, f"{path}.measurements")}
    out = []
    for r in range(n):
        try:
            out.append(event_from_dict(_row(d, r), path))
        except InputError as exc:
            raise InputError(row_field(path, r, exc.field.removeprefix(path).lstrip(".")), exc.value,
                             exc.message) from None
        except OverflowError:  # an integer beyond a float's range, where a number is read as a float
            raise InputError(f"{path}[{r}]", _row(d, r), TOO_LARGE) from None
    return out


def row_field(path: str, row: int, rest: str) -> str:
    """The name of field ``rest`` of row ``row`` of the columnar document at ``path``: ``epoch`` ->
    ``{path}.epoch[{row}]``, ``measurements[0].gpus`` -> ``{path}.measurements[{row}][0].gpus``, the event as a
    whole (``""``, ``type``) -> ``{path}[{row}]``."""
    if not rest or rest == "type":
        return f"{path}[{row}]"
    head = rest.split(".", 1)[0]
    key, sep, tail = rest.partition("[") if "[" in head else rest.partition(".")
    return f"{path}.{key}[{row}]{sep and (sep if sep == '[' else '.')}{tail}"


def progress_columns(d: Any, path: str) -> ProgressColumns | list[JobProgress]:
    """The columnar document ``d`` (``type`` ``JobProgressBatch``) checked: its columns as they are when every
    value passes at once, otherwise its rows as ``JobProgress`` events (read by the general route); bad input an
    :class:`~schedopt.errors.InputError` naming ``{path}.{column}[row]`` and the value."""
    if not isinstance(d, dict) or d.get("type") != PROGRESS_BATCH:
        raise InputError(f"{path}.type", d.get("type") if isinstance(d, dict) else d, f"must be {PROGRESS_BATCH!r}")
    _shape({k: v for k, v in d.items() if k != "type"}, path, COLUMNS, ("job_id", "time"), "column",
           ("job_id", "one job id a row"))
    ids = d["job_id"]
    n = len(ids)
    for k in COLUMNS:
        if k in d and k != "job_id" and not (k == "time" and type(d[k]) is not list) and not (
                k == "measurements" and type(d[k]) is dict):
            if type(d[k]) is not list or len(d[k]) != n:
                raise InputError(f"{path}.{k}", d[k] if type(d[k]) is not list else len(d[k]),
                                 f"must be a list of {n} values (one a row, as job_id)" + (
                                     " or one number" if k == "time" else ""))
    fast = _fast(d, n)
    return fast if fast is not None else _slow(d, n, path)


def progress_batch(d: Any, path: str) -> list[JobProgress]:
    """The ``JobProgress`` events of the columnar document ``d`` (``type`` ``JobProgressBatch``), in row order;
    bad input an :class:`~schedopt.errors.InputError` naming ``{path}.{column}[row]`` and the value."""
    got = progress_columns(d, path)
    return got.events() if isinstance(got, ProgressColumns) else got
