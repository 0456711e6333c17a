"""The bounds of :mod:`schedopt.sim`'s inputs, checked in one place (card: ``formulations/sim.md``, Input validation).

Every numeric input of a simulation (round length, time cap, seeds, workers, a workload's arrival times, replicas
and batch sizes) has a lower and an upper bound, so that no input can make a run hang (a 1e-9 s round, 10**8 seeds)
or answer silently (a job arriving at 1e300). The same functions serve :func:`~schedopt.sim.simulate`,
:func:`~schedopt.sim.simulate_many` and the command line: each takes the value and the name of the field it came
from (``"round_seconds"``, ``"--round-seconds"``) and returns the value normalized (a float, an int) or raises
:class:`~schedopt.errors.InputError` naming the field, the value and the bound.

>>> check_round_seconds(60)
60.0
>>> check_round_seconds(1e-9)                                                          # doctest: +SKIP
InputError: round_seconds=1e-09: must be >= MIN_ROUND_SECONDS = 1 s
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = [
    "DEFAULT_HORIZON_SECONDS",
    "MAX_ARRIVAL_SECONDS",
    "MAX_BATCH_SIZE",
    "MAX_REPLICAS",
    "MAX_ROUNDS",
    "MAX_ROUND_SECONDS",
    "MAX_SEED",
    "MAX_TASKS",
    "MAX_TIME_SECONDS",
    "MAX_WORKERS",
    "MAX_WORKLOAD_JOBS",
    "MIN_ROUND_SECONDS",
    "check_flag",
    "check_max_time",
    "check_round_seconds",
    "check_rounds",
    "check_seed",
    "check_seeds",
    "check_tasks",
    "check_workers",
    "default_stop",
    "parse_bool",
    "parse_seeds",
]

_YEAR = 365 * 86400.0

#: A round is at least one second: the engine's cost is per round, and the published simulators use 60 s (Synergy
#: 300 s, Gandiva 60 s); below a second a week-long trace is millions of policy calls.
MIN_ROUND_SECONDS = 1.0
#: ... and at most one day (a longer round re-plans less than once per job arrival of any published trace).
MAX_ROUND_SECONDS = 86400.0
#: The latest arrival time and the largest time cap: ten years of simulated time, in seconds (the longest published
#: trace, Philly's, spans about three months).
MAX_ARRIVAL_SECONDS = 10 * _YEAR
#: The largest time cap: the latest arrival plus 60 days.
MAX_TIME_SECONDS = 10 * _YEAR + 60 * 86400.0  # the engine's default cap is the last arrival + 60 days
#: No simulation runs more rounds than this (``ceil(stop / round_seconds)``), checked before the first round: 10**7
#: rounds of 60 s are 19 years; at 1 s they are 116 days.
MAX_ROUNDS = 10**7
#: Seeds are what numpy's legacy ``RandomState`` and most generators accept: ``0 <= seed < 2**32``.
MAX_SEED = 2**32
#: A sweep (policies x workloads x seeds) materializes at most this many tasks (counted before building them).
MAX_TASKS = 100_000
#: Worker processes of a local pool.
MAX_WORKERS = 1024
#: A job's requested GPUs (replicas) and batch size: the largest cluster preset has 2**16 GPUs (HiveD's bound) and no
#: application of the zoo trains above a global batch of 2**20 (ncf's largest profiled batch is 2**15 x 8).
MAX_REPLICAS = 2**16
#: The largest batch size a job may request.
MAX_BATCH_SIZE = 2**24
#: Jobs in one workload (the largest shipped trace has about 8,000).
MAX_WORKLOAD_JOBS = 10**6


#: The engine's time cap when none is given: the last arrival plus 60 days (both published simulators' horizon).
DEFAULT_HORIZON_SECONDS = 60 * 86400.0


def default_stop(workload: Any) -> float:
    """The engine's default time cap for ``workload``: its last arrival + DEFAULT_HORIZON_SECONDS."""
    return max((float(j.time) for j in workload.jobs), default=0.0) + DEFAULT_HORIZON_SECONDS


def _real(value: Any, field: str) -> float:
    """A finite real number (not a bool, not a string) as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(field, value, "must be a number")
    try:
        x = float(value)
    except (OverflowError, ValueError):  # an int too large for a float
        raise InputError(field, value, "must be a finite number") from None
    if not math.isfinite(x):
        raise InputError(field, value, "must be a finite number")
    return x


def _integer(value: Any, field: str) -> int:
    """An integer (int or numpy integer; an integral float such as 3.0 too, not a bool) as an int."""
    if isinstance(value, bool):
        raise InputError(field, value, "must be an integer, not a bool")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        x = _real(value, field)
        if x != int(x):
            raise InputError(field, value, "must be an integer")
        return int(x)
    raise InputError(field, value, "must be an integer")


def check_round_seconds(value: Any, field: str = "round_seconds") -> float:
    """A round length in seconds: a finite number in [MIN_ROUND_SECONDS, MAX_ROUND_SECONDS] (1 s .. 1 day)."""
    x = _real(value, field)
    if x < MIN_ROUND_SECONDS:
        raise InputError(field, value, f"must be >= MIN_ROUND_SECONDS = {MIN_ROUND_SECONDS:g} s")
    if x > MAX_ROUND_SECONDS:
        raise InputError(field, value, f"must be <= MAX_ROUND_SECONDS = {MAX_ROUND_SECONDS:g} s (one day)")
    return x


def check_max_time(value: Any, field: str = "max_time", *, allow_none: bool = True) -> float | None:
    """A time cap in seconds (None: the engine's default, the last arrival + 60 days): finite, > 0, at most
    MAX_TIME_SECONDS (ten years and 60 days)."""
    if value is None and allow_none:
        return None
    x = _real(value, field)
    if x <= 0:
        raise InputError(field, value, "must be > 0 (seconds of simulated time)")
    if x > MAX_TIME_SECONDS:
        raise InputError(field, value, f"must be <= MAX_TIME_SECONDS = {MAX_TIME_SECONDS:g} s (ten years + 60 days)")
    return x


def check_rounds(stop: float, round_seconds: float, field: str = "round_seconds") -> int:
    """The most rounds a simulation to ``stop`` with rounds of ``round_seconds`` can run (``floor(stop / round) + 1``);
    an :class:`InputError` naming ``field`` when that exceeds MAX_ROUNDS."""
    n = math.floor(stop / round_seconds) + 1
    if n > MAX_ROUNDS:
        raise InputError(field, round_seconds,
                         f"would allow {n:,} rounds to t = {stop:g} s, more than MAX_ROUNDS = {MAX_ROUNDS:,}: "
                         "use longer rounds or a smaller max_time")
    return n


def check_seed(value: Any, field: str = "seed") -> int:
    """A seed: an integer with ``0 <= seed < 2**32``."""
    s = _integer(value, field)
    if not 0 <= s < MAX_SEED:
        raise InputError(field, value, "must be an integer with 0 <= seed < 2**32")
    return s


def check_seeds(values: Any, field: str = "seeds", *, limit: int = MAX_TASKS) -> list[int]:
    """A sequence of seeds (a ``range`` is counted without being materialized): at least one, at most ``limit``, each
    checked by :func:`check_seed`, no seed twice."""
    if isinstance(values, str):
        return parse_seeds(values, field, limit=limit)
    if isinstance(values, bool) or not isinstance(values, Iterable):
        raise InputError(field, values, "must be a sequence of integer seeds (or a text like '0-3' or '0,2')")
    if isinstance(values, range):
        n = len(values)
        if n > limit:
            raise InputError(field, f"range of {n:,} seeds", f"names more than {limit:,} seeds")
        if n:
            check_seed(values[0], f"{field}[0]")
            check_seed(values[-1], f"{field}[{n - 1}]")
        out = list(values)
    else:
        out = []
        for k, v in enumerate(values):
            if k >= limit:
                raise InputError(field, f"more than {limit:,} seeds", f"names more than {limit:,} seeds")
            out.append(check_seed(v, f"{field}[{k}]"))
    if not out:
        raise InputError(field, values, "names no seed")
    dup = _first_repeat(out)
    if dup is not None:
        raise InputError(field, dup, "names a seed twice (a sweep would run the same simulation twice)")
    return out


def parse_seeds(text: str, field: str = "--seeds", *, limit: int = MAX_TASKS) -> list[int]:
    """``"0-3"`` -> [0, 1, 2, 3]; ``"0,2,5"`` -> [0, 2, 5]; counted before anything is built: more than ``limit``
    seeds, a reversed range, a seed outside [0, 2**32) or a seed twice is an :class:`InputError`."""
    if not isinstance(text, str):
        raise InputError(field, text, "must be a text like '0-3' or '0,2,5'")
    spans: list[tuple[int, int]] = []
    total = 0
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        a, sep, b = part.partition("-")
        try:
            lo = int(a.strip())
            hi = int(b.strip()) if sep else lo
        except ValueError:
            raise InputError(field, text, "must look like 0-3 or 0,1,2 (seeds >= 0)") from None
        if hi < lo:
            raise InputError(field, part, "is a reversed range (write low-high)")
        for s in (lo, hi):
            check_seed(s, field)
        total += hi - lo + 1
        if total > limit:
            raise InputError(field, text, f"names more than {limit:,} seeds")
        spans.append((lo, hi))
    out = [s for lo, hi in spans for s in range(lo, hi + 1)]
    if not out:
        raise InputError(field, text, "names no seed")
    dup = _first_repeat(out)
    if dup is not None:
        raise InputError(field, text, f"names seed {dup} twice")
    return out


def _first_repeat(values: list[int]) -> int | None:
    seen: set[int] = set()
    for v in values:
        if v in seen:
            return v
        seen.add(v)
    return None


def check_tasks(n_policies: int, n_workloads: int, n_seeds: int, field: str = "seeds", *,
                limit: int = MAX_TASKS) -> int:
    """The number of tasks of a sweep, refused (naming ``field``) past ``limit`` before any is built."""
    n = int(n_policies) * int(n_workloads) * int(n_seeds)
    if n > limit:
        raise InputError(field, f"{n_policies} policies x {n_workloads} workloads x {n_seeds} seeds",
                         f"makes {n:,} simulations, more than MAX_TASKS = {limit:,}")
    return n


def check_workers(value: Any, field: str = "workers", *, allow_none: bool = True) -> int | None:
    """A count of worker processes: an integer in 1..MAX_WORKERS (None: the default, when allowed)."""
    if value is None and allow_none:
        return None
    w = _integer(value, field)
    if not 1 <= w <= MAX_WORKERS:
        raise InputError(field, value, f"must be an integer in 1..{MAX_WORKERS}")
    return w


_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


def parse_bool(value: Any, field: str) -> bool:
    """A strict boolean: ``True`` / ``False`` (or numpy's), the integers 0 and 1, or the texts true / false, yes / no,
    on / off, 1 / 0 in any case and surrounding space; anything else (``"n"``, ``"2"``, ``2``, ``None``, NaN) is an
    :class:`InputError` naming ``field``. (``bool("no")`` is True: this is the function to use instead.)"""
    if isinstance(value, bool):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral) and int(value) in (0, 1):
        return bool(int(value))
    if isinstance(value, str):
        t = value.strip().lower()
        if t in _TRUE:
            return True
        if t in _FALSE:
            return False
    raise InputError(field, value, "must be a boolean (true/false, yes/no, on/off, 1/0)")


def check_flag(value: Any, field: str, *, allow_none: bool = False) -> bool | None:
    """A Python-side flag: exactly a bool (or numpy's; None when allowed). Texts are refused here: ``"no"`` given to
    a Python argument is a mistake, not a choice (the command line parses its texts with :func:`parse_bool`)."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InputError(field, value, "must be True or False" + (" (or None)" if allow_none else ""))
