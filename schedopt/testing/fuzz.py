"""Bad-input fuzzing of schedopt's public entry points (issue 20).

Every public constructor, loader and :func:`schedopt.solve` parameter must, for any input, either work or raise a
:class:`~schedopt.errors.SchedoptError` subclass, within a few seconds. This module holds

* catalogs of bad values per kind of field (:data:`CATALOG`: wrong types, None, NaN, inf, negative, zero, empty,
  1e300, huge integers, duplicates, unknown names, mismatched shapes) and hypothesis strategies over them
  (:func:`bad_values`, :func:`cases`), with generated values for the longer run;
* the entry points (:func:`entry_points`), each a valid call plus its fields and their kinds; the call runs the path
  from the spec to a built (and, where cheap, solved) model, so a bad value accepted at the boundary and crashing
  later is found too;
* :func:`run_case`, which calls one entry point with one field replaced and classifies the outcome (:class:`Outcome`):
  ``ok`` (it worked), ``named`` (a SchedoptError), ``raw`` (any other exception), ``hang`` (over the time limit) or
  ``silent`` (a value no field of that kind can mean, such as NaN GPUs, was accepted: a meaningless answer);
* :func:`survey` and ``python -m schedopt.testing.fuzz``, which run every case and print the failures, one line of
  reproduction each.

hypothesis is a test extra: import this module only where it is installed.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import gc
import json
import math
import signal
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..errors import SchedoptError

__all__ = [
    "CATALOG",
    "CORE",
    "DOCUMENT_SOURCES",
    "FILE_CASES",
    "KNAPSACK_OPTIMUM",
    "MISSING",
    "YAML_CASES",
    "Bad",
    "Case",
    "CliExit",
    "EntryPoint",
    "FuzzTimeout",
    "Outcome",
    "Survey",
    "all_cases",
    "apply_document_case",
    "bad_values",
    "cases",
    "core",
    "document_cases",
    "document_entry",
    "entry_points",
    "lies",
    "main",
    "run_case",
    "run_document_case",
    "run_file_case",
    "survey",
    "time_limit",
]

FAILING = ("raw", "hang", "silent")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: a key removed from a mapping (JSON loaders) rather than given a value
MISSING: Any = _Missing()


@dataclass(frozen=True)
class Bad:
    """One bad value. ``reject``: no field of its kind can mean it, so accepting it is a silent wrong answer;
    otherwise (``"3"`` for a count, ``True`` for an int, 1e300 for a price) working is fine, crashing is not."""

    label: str
    value: Any
    reject: bool = True

    def fresh(self) -> Any:
        return self.value if self.value is MISSING else copy.deepcopy(self.value)


def _bads(*items: tuple[str, Any] | tuple[str, Any, bool]) -> tuple[Bad, ...]:
    return tuple(Bad(*it) for it in items)


_TYPES = _bads(("None", None), ("'abc'", "abc"), ("''", ""), ("[]", []), ("{}", {}), ("object()", object()))
_NONFINITE = _bads(("nan", math.nan), ("inf", math.inf), ("-inf", -math.inf))
_SIZE = _bads(("-1", -1), ("0", 0), ("1.5", 1.5), ("1e300", 1e300), ("2**64", 2**64), ("10**18", 10**18),
              ("-(2**70)", -(2**70)), ("'3'", "3", False), ("True", True, False), ("np.int64(2)", np.int64(2), False))

#: bad values per kind of field
CATALOG: dict[str, tuple[Bad, ...]] = {
    # an integer count that must be >= 1 (GPUs, nodes, jobs)
    "count": _TYPES + _NONFINITE + _SIZE,
    # the same, None allowed (its default)
    "count?": _TYPES[1:] + _NONFINITE + _SIZE,
    # an integer demand >= 1 (GPUs a job asks for, pods): a huge one may be accepted and left unmet
    "demand": _TYPES + _NONFINITE + _bads(("-1", -1), ("0", 0), ("1.5", 1.5), ("1e300", 1e300), ("2**64", 2**64, False),
                                          ("10**18", 10**18, False), ("'3'", "3", False), ("True", True, False)),
    # an optional cap (None: no cap): a huge one means no cap
    "cap?": _TYPES[1:] + _NONFINITE + _bads(("-1", -1), ("0", 0), ("1.5", 1.5), ("1e300", 1e300), ("2**64", 2**64, False),
                                            ("10**18", 10**18, False), ("'3'", "3", False)),
    # an integer >= 0 (restarts, profiled GPUs, limits)
    "nonneg_int": _TYPES + _NONFINITE + _bads(("-1", -1), ("1.5", 1.5), ("1e300", 1e300), ("2**64", 2**64),
                                              ("10**18", 10**18), ("'3'", "3", False), ("0", 0, False)),
    # any integer (a seed)
    "seed": _bads(("None", None, False), ("'abc'", "abc"), ("[]", []), ("nan", math.nan), ("1.5", 1.5),
                  ("-1", -1, False), ("2**64", 2**64, False), ("-(2**70)", -(2**70), False)),
    # a real > 0 (a price, a batch size, a throughput)
    "pos_float": _TYPES + _NONFINITE + _bads(("-1", -1.0), ("0", 0.0), ("-0.0", -0.0), ("1e-300", 1e-300, False),
                                             ("1e300", 1e300, False), ("2**64", 2**64, False), ("'3'", "3", False)),
    "pos_float?": _TYPES[1:] + _NONFINITE + _bads(("-1", -1.0), ("0", 0.0), ("1e300", 1e300, False)),
    # a real >= 0 (an age, a cost, a time)
    "nonneg_float": _TYPES + _NONFINITE + _bads(("-1", -1.0), ("-1e-300", -1e-300), ("0", 0.0, False),
                                                ("1e300", 1e300, False), ("2**64", 2**64, False)),
    # a real in [0, 1]
    "fraction": _TYPES + _NONFINITE + _bads(("-0.1", -0.1), ("1.5", 1.5), ("1e300", 1e300), ("0", 0.0, False),
                                            ("1", 1.0, False)),
    # any finite real
    "real": _TYPES + _NONFINITE + _bads(("1e300", 1e300, False), ("-1e300", -1e300, False), ("0", 0.0, False),
                                        ("2**64", 2**64, False)),
    # a non-empty name
    "name": _bads(("None", None), ("''", ""), ("[]", []), ("{}", {}), ("['a']", ["a"]), ("nan", math.nan),
                  ("3", 3, False), ("' '", " ", False), ("'x'*10**5", "x" * 10**5, False), ("'\\x00'", "\x00", False)),
    # a model's name (None: the default)
    "model_name": _bads(("[]", []), ("{}", {}), ("nan", math.nan), ("None", None, False), ("3", 3, False),
                        ("''", "", False)),
    # an optional name (None: a generated one)
    "name?": _bads(("''", ""), ("[]", []), ("{}", {}), ("['a']", ["a"]), ("nan", math.nan), ("3", 3, False)),
    # a name that must be one of a known set (a GPU type, a model, a VC)
    "known_name": _bads(("None", None), ("''", ""), ("'no-such-name'", "no-such-name"), ("[]", []), ("['a']", ["a"]),
                        ("3", 3), ("nan", math.nan)),
    # one of a few words (a kind, a sense)
    "choice": _bads(("None", None), ("''", ""), ("'no-such-choice'", "no-such-choice"), ("3", 3), ("[]", []),
                    ("nan", math.nan)),
    # a list of known names
    "names": _bads(("'abc'", "abc"), ("[None]", [None]), ("[3]", [3]), ("['no-such-name']", ["no-such-name"]),
                   ("['', '']", ["", ""]), ("{}", {}), ("3", 3), ("[]", [], False)),
    # a flag
    "bool": _bads(("None", None, False), ("'false'", "false"), ("nan", math.nan), ("2", 2, False), ("[]", [])),
    # a lower bound (a scalar or one per element of 3): +inf and NaN mean nothing
    "lower": _bads(("nan", math.nan), ("inf", math.inf), ("'abc'", "abc"), ("[0, 0]", [0.0, 0.0]),
                   ("[nan]*3", [math.nan] * 3), ("[None]*3", [None] * 3), ("{}", {}), ("object()", object()),
                   ("-inf", -math.inf, False), ("1e300", 1e300, False), ("-1e300", -1e300, False),
                   ("None", None, False)),
    "upper": _bads(("nan", math.nan), ("-inf", -math.inf), ("'abc'", "abc"), ("[1, 1]", [1.0, 1.0]),
                   ("[nan]*3", [math.nan] * 3), ("[None]*3", [None] * 3), ("{}", {}), ("object()", object()),
                   ("inf", math.inf, False), ("1e300", 1e300, False), ("None", None, False)),
    # a vector of 3 reals (objective coefficients)
    "vector3": _bads(("None", None), ("'abc'", "abc"), ("[]", []), ("[1, 2]", [1.0, 2.0]), ("[[1, 2, 3]]*2", [[1, 2, 3]] * 2),
                     ("[nan]*3", [math.nan] * 3), ("[inf]*3", [math.inf] * 3), ("[None]*3", [None] * 3),
                     ("['1', '2', '3']", ["1", "2", "3"], False), ("[1e300]*3", [1e300] * 3, False),
                     ("[1e-200]*3", [1e-200] * 3, False), ("[[1], [2, 3]]", [[1], [2, 3]])),
    # a 1 x 3 matrix (constraint coefficients)
    "matrix1x3": _bads(("None", None), ("'abc'", "abc"), ("[]", []), ("[[1, 2]]", [[1.0, 2.0]]),
                       ("[[nan]*3]", [[math.nan] * 3]), ("[[inf]*3]", [[math.inf] * 3]), ("[[None]*3]", [[None] * 3]),
                       ("[[1], [2, 3]]", [[1], [2, 3]]), ("{}", {}), ("5", 5), ("[[1e300]*3]", [[1e300] * 3], False),
                       ("[[1e-200, 1, 1]]", [[1e-200, 1, 1]], False)),
    # the same, None allowed (no constraints)
    "matrix1x3?": _bads(("'abc'", "abc"), ("[]", []), ("[[1, 2]]", [[1.0, 2.0]]), ("[[nan]*3]", [[math.nan] * 3]),
                        ("[[inf]*3]", [[math.inf] * 3]), ("[[None]*3]", [[None] * 3]), ("[[1], [2, 3]]", [[1], [2, 3]]),
                        ("{}", {}), ("5", 5), ("[[1e300]*3]", [[1e300] * 3], False),
                        ("[[1e-200, 1, 1]]", [[1e-200, 1, 1]], False)),
    # a variable shape
    "shape": _TYPES + _bads(("-1", -1), ("1.5", 1.5), ("nan", math.nan), ("10**18", 10**18), ("2**64", 2**64),
                            ("(2, -1)", (2, -1)), ("0", 0, False), ("()", (), False)),
    # labels for 3 items
    "labels3": _bads(("'abc'", "abc"), ("['a', 'a', 'b']", ["a", "a", "b"]), ("['a']", ["a"]), ("3", 3),
                     ("[None]*3", [None] * 3, False), ("{}", {})),
    # a time limit in seconds (None and inf: no limit)
    "time_limit": _bads(("nan", math.nan), ("-1", -1.0), ("'abc'", "abc"), ("[]", []), ("inf", math.inf, False),
                        ("0", 0.0, False), ("1e300", 1e300, False), ("2**64", 2**64, False), ("True", True, False),
                        ("'1'", "1", False)),
    # a relative gap in [0, 1)
    "gap": _bads(("nan", math.nan), ("-1", -1.0), ("1", 1.0), ("inf", math.inf), ("'abc'", "abc"), ("[]", []),
                 ("0", 0.0, False), ("1e-300", 1e-300, False)),
    # a thread count (0: the solver's choice)
    "threads": _bads(("-1", -1), ("1.5", 1.5), ("nan", math.nan), ("None", None), ("'abc'", "abc"),
                     ("10**6", 10**6, False), ("2**40", 2**40, False), ("2**64", 2**64, False), ("True", True, False)),
    # a warm start for a model of 3 columns
    "warm_start3": _bads(("[nan]*3", [math.nan] * 3), ("[inf]*3", [math.inf] * 3), ("[0, 0]", [0.0, 0.0]),
                         ("'abc'", "abc"), ("[None]*3", [None] * 3), ("{}", {}), ("[1e300]*3", [1e300] * 3, False),
                         ("[-5]*3", [-5.0] * 3, False), ("[0.5]*3", [0.5] * 3, False)),
    # a backend name
    "backend": _bads(("'no-such-backend'", "no-such-backend"), ("3", 3), ("['highs']", ["highs"]),
                     ("'HIGHS'", "HIGHS", False), ("''", "", False)),
    # a numeric array of shape (9, 5) (a Synergy throughput matrix)
    "grid9x5": _bads(("None", None), ("[]", []), ("zeros((5, 9))", np.zeros((5, 9))),
                     ("full nan", np.full((9, 5), np.nan)), ("full inf", np.full((9, 5), np.inf)),
                     ("full -1", np.full((9, 5), -1.0)), ("strings", [["a"] * 5] * 9), ("'abc'", "abc")),
    # an increasing grid of 9 / 5 positive reals
    "grid9": _bads(("None", None), ("[]", []), ("decreasing", list(range(9, 0, -1))), ("[nan]*9", [math.nan] * 9),
                   ("[-1]*9", [-1.0] * 9), ("8 values", list(range(1, 9))), ("strings", ["a"] * 9)),
    "grid5": _bads(("None", None), ("[]", []), ("decreasing", [5, 4, 3, 2, 1]), ("[nan]*5", [math.nan] * 5),
                   ("duplicates", [1, 1, 2, 3, 4]), ("4 values", [1, 2, 3, 4]), ("strings", ["a"] * 5)),
    # a mapping name -> real (per resource type)
    "per_type": _bads(("None", None), ("{}", {}), ("[]", []), ("{'CPU': nan, 'GPU': nan}", {"CPU": math.nan, "GPU": math.nan}),
                      ("{'CPU': -1, 'GPU': -1}", {"CPU": -1.0, "GPU": -1.0}),
                      ("{'CPU': 'a', 'GPU': 'a'}", {"CPU": "a", "GPU": "a"}),
                      ("{'no-such-type': 1}", {"no-such-type": 1.0}), ("'abc'", "abc")),
    # a mapping cell type -> count (a HiveD virtual cluster)
    "cells": _bads(("None", None), ("[]", []), ("{'no-such-cell': 1}", {"no-such-cell": 1}),
                   ("{'V100-NODE': -1}", {"V100-NODE": -1}), ("{'V100-NODE': 10**18}", {"V100-NODE": 10**18}),
                   ("{'V100-NODE': nan}", {"V100-NODE": math.nan}), ("{'V100-NODE': 'a'}", {"V100-NODE": "a"}),
                   ("'abc'", "abc")),
    # a goodput table for 2 jobs
    "goodput": _bads(("None", None), ("'abc'", "abc"), ("[]", []), ("zeros((3, 1))", np.zeros((3, 1))),
                     ("full nan", "nan-table"), ("full inf", "inf-table"), ("full -1", "neg-table"),
                     ("{}", {}), ("{'j0': None}", {"j0": None})),
    # a sequence of 2 jobs / nodes / layers (duplicates, wrong items)
    "items": _bads(("None", None), ("'abc'", "abc"), ("[None]", [None]), ("[3]", [3]), ("duplicates", "dup"),
                   ("{}", {}), ("[]", [], False)),
}


#: the few values per kind that the default test run tries (one of each category: a wrong type, a non-finite
#: number, a sign, a huge size); the longer run tries the whole catalog and drawn values
CORE: dict[str, tuple[str, ...]] = {
    "count": ("'abc'", "nan", "-1", "2**64", "10**18"),
    "count?": ("'abc'", "nan", "0", "2**64", "10**18"),
    "demand": ("'abc'", "nan", "-1", "2**64", "10**18"),
    "cap?": ("'abc'", "nan", "0", "2**64"),
    "name?": ("''", "['a']", "nan"),
    "nonneg_int": ("None", "inf", "-1", "2**64", "10**18"),
    "seed": ("'abc'", "1.5", "-1", "2**64"),
    "pos_float": ("'abc'", "nan", "inf", "-1", "0"),
    "pos_float?": ("[]", "nan", "-1", "0"),
    "nonneg_float": ("None", "nan", "inf", "-1"),
    "fraction": ("'abc'", "nan", "-0.1", "1.5"),
    "real": ("None", "nan", "inf", "1e300"),
    "name": ("None", "''", "['a']", "nan"),
    "model_name": ("[]", "nan", "None"),
    "known_name": ("None", "'no-such-name'", "['a']"),
    "choice": ("None", "'no-such-choice'", "[]"),
    "names": ("'abc'", "[None]", "['no-such-name']", "['', '']"),
    "bool": ("None", "'false'", "nan"),
    "lower": ("nan", "inf", "[0, 0]", "[None]*3", "-inf"),
    "upper": ("nan", "-inf", "[1, 1]", "[nan]*3", "inf"),
    "vector3": ("None", "'abc'", "[1, 2]", "[nan]*3", "[None]*3", "[1e-200]*3"),
    "matrix1x3": ("None", "'abc'", "[[1, 2]]", "[[inf]*3]", "[[None]*3]", "[[1], [2, 3]]", "[[1e300]*3]"),
    "matrix1x3?": ("'abc'", "[[1, 2]]", "[[inf]*3]", "[[None]*3]", "[[1], [2, 3]]", "[[1e300]*3]"),
    "shape": ("None", "'abc'", "-1", "nan", "10**18"),
    "time_limit": ("nan", "-1", "'abc'", "inf", "0", "1e300"),
    "gap": ("nan", "-1", "1", "'abc'"),
    "threads": ("-1", "None", "10**6", "2**40"),
    "warm_start3": ("[nan]*3", "[0, 0]", "'abc'", "[None]*3"),
    "grid9x5": ("None", "zeros((5, 9))", "full nan", "strings"),
    "grid9": ("None", "decreasing", "[nan]*9", "strings"),
    "grid5": ("None", "duplicates", "[nan]*5", "strings"),
    "per_type": ("None", "{'CPU': nan, 'GPU': nan}", "{'CPU': 'a', 'GPU': 'a'}", "{'no-such-type': 1}"),
    "cells": ("None", "{'no-such-cell': 1}", "{'V100-NODE': 10**18}", "{'V100-NODE': nan}"),
}


def core(kind: str) -> tuple[Bad, ...]:
    """The default run's values of ``kind`` (its whole catalog when no core is named)."""
    labels = CORE.get(kind)
    if labels is None:
        return CATALOG[kind]
    by_label = {b.label: b for b in CATALOG[kind]}
    return tuple(by_label[lab] for lab in labels)


def bad_values(kind: str, *, generated: bool = False) -> st.SearchStrategy[Bad]:
    """The catalog of ``kind`` (finite, so a derandomized run enumerates it); ``generated`` adds drawn values
    (any float, any integer, any short text) for the longer run: those may be accepted, but must not crash or hang."""
    s: st.SearchStrategy[Bad] = st.sampled_from(CATALOG[kind])
    if generated:
        drawn = st.one_of(st.floats(), st.integers(), st.text(max_size=5), st.none(),
                          st.lists(st.floats(), max_size=4), st.booleans())
        s = s | drawn.map(lambda v: Bad(f"{v!r}"[:60], v, reject=False))
    return s


# ------------------------------------------------------------------ entry points
@dataclass(frozen=True)
class EntryPoint:
    """A public entry point: ``call(**kwargs)`` runs it (and the path to a built model) on ``valid()`` kwargs with
    one field replaced; ``fields`` maps each fuzzed field to its kind in :data:`CATALOG`; ``accept`` (optional)
    checks what a call returned (a solve's answer must not lie); ``prepare`` turns a catalog placeholder into a
    value (for values that depend on the valid input, such as duplicates)."""

    name: str
    call: Callable[..., Any]
    valid: Callable[[], dict[str, Any]]
    fields: Mapping[str, str]
    accept: Callable[[Any], str | None] | None = None
    prepare: Callable[[str, Any, dict[str, Any]], Any] | None = None
    slow: bool = False  #: each call takes about a second (a solver started in a subprocess): the longer run only


@dataclass(frozen=True)
class Case:
    field: str
    bad: Bad

    def __repr__(self) -> str:
        return f"{self.field}={self.bad.label}"


@dataclass(frozen=True)
class Outcome:
    status: str  # ok | named | raw | hang | silent
    entry: str
    case: Case | None
    detail: str = ""
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status in FAILING

    def repro(self) -> str:
        where = f"{self.entry}({self.case!r})" if self.case else f"{self.entry}(valid input)"
        return f"{self.status:6s} {where} -> {self.detail}"


class FuzzTimeout(BaseException):  # a BaseException, so that no `except Exception` swallows it
    """Raised inside a call that overran its time limit."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block after ``seconds`` with :class:`FuzzTimeout` (SIGALRM; main thread of a POSIX process).
    Code blocked inside a C extension is interrupted when it returns to Python."""
    if not hasattr(signal, "setitimer") or not _in_main_thread():
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise FuzzTimeout(f"over {seconds} s")

    def unraisable(info: Any) -> None:  # an alarm that landed in a __del__ or a callback: the next one will do
        if not isinstance(info.exc_value, FuzzTimeout):
            old_hook(info)

    old = signal.signal(signal.SIGALRM, on_alarm)
    old_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    gc_was_enabled = gc.isenabled()
    gc.disable()  # no garbage-collector callbacks (hypothesis has one) for the alarm to land in
    # then every 50 ms until disarmed: an alarm raised where Python swallows it must not let the call run on
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.05)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        sys.unraisablehook = old_hook
        if gc_was_enabled:
            gc.enable()


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_case(entry: EntryPoint, case: Case | None, timeout: float = 5.0) -> Outcome:
    """Call ``entry`` with ``case`` (None: the valid input) and classify what happened."""
    kwargs = entry.valid()
    if case is not None:
        value = case.bad.fresh()
        if entry.prepare is not None:
            value = entry.prepare(case.field, value, kwargs)
        if value is MISSING:
            kwargs.pop(case.field, None)
        else:
            kwargs[case.field] = value
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            with time_limit(timeout):
                out = entry.call(**kwargs)
                why = entry.accept(out) if entry.accept is not None else None
    except FuzzTimeout:
        return Outcome("hang", entry.name, case, f"no answer within {timeout} s", time.perf_counter() - t0)
    except SchedoptError as exc:
        return Outcome("named", entry.name, case, _short(f"{type(exc).__name__}: {exc}"), time.perf_counter() - t0)
    except Exception as exc:
        return Outcome("raw", entry.name, case, _short(f"{type(exc).__name__}: {exc}"), time.perf_counter() - t0)
    seconds = time.perf_counter() - t0
    if why:
        return Outcome("silent", entry.name, case, _short(why), seconds)
    if case is not None and case.bad.reject:
        return Outcome("silent", entry.name, case, "accepted", seconds)
    return Outcome("ok", entry.name, case, "", seconds)


def cases(entry: EntryPoint, field_name: str | None = None, *, generated: bool = False) -> st.SearchStrategy[Case]:
    """Cases for one field of ``entry`` (or any of its fields)."""
    names = [field_name] if field_name else list(entry.fields)
    return st.one_of(*[bad_values(entry.fields[f], generated=generated).map(lambda b, f=f: Case(f, b)) for f in names])


def all_cases(entry: EntryPoint, field_name: str | None = None, *, only_core: bool = False) -> list[Case]:
    """Every catalog case of ``entry`` (or of one field), or only the default run's core values."""
    names = [field_name] if field_name else list(entry.fields)
    return [Case(f, b) for f in names for b in (core if only_core else CATALOG.__getitem__)(entry.fields[f])]


# ------------------------------------------------------------------ the catalog of entry points
def _knapsack() -> Any:
    """max 3a + 4b + 5c, 2a + 3b + 4c <= 7, binary: optimum 9 (b = c = 1), checked by hand."""
    from ..model import LinearModel

    m = LinearModel("knapsack", sense="maximize")
    m.add_variables("x", 3, kind="binary")
    m.add_constraints("weight", {"x": [[2, 3, 4]]}, upper=7)
    m.set_objective({"x": [3, 4, 5]})
    return m


KNAPSACK_OPTIMUM = 9.0


def _solve_honest(res: Any, optimum: float = KNAPSACK_OPTIMUM, tol: float = 1e-6) -> str | None:
    """Why a result of the knapsack (a maximisation of optimum 9, x = (0, 1, 1)) lies, or None."""
    from ..results import TerminationReason

    why = lies(_knapsack(), res, None, tol)
    if why:
        return why
    reason = res.termination.reason
    if reason == TerminationReason.OPTIMAL and abs(res.objective - optimum) > tol:
        return f"OPTIMAL with objective {res.objective} (optimum {optimum})"
    if math.isfinite(res.bound) and res.bound < optimum - tol:
        return f"{reason.name} with bound {res.bound}, below the optimum {optimum} (a maximisation)"
    if reason in (TerminationReason.INFEASIBLE, TerminationReason.UNBOUNDED):
        return f"{reason.name} on a feasible bounded model (optimum {optimum})"
    return None


def lies(model: Any, res: Any, reference: Any = None, tol: float = 1e-6) -> str | None:
    """Why ``res`` (a result on ``model``) claims more than it holds, or None: a held solution that violates the
    model or whose objective differs from its value; INFEASIBLE, or a bound beaten, when ``reference`` (another
    backend's result on the same model) holds a solution that the model itself accepts; an OPTIMAL objective that
    differs from the reference's OPTIMAL one."""
    from ..results import TerminationReason as R

    reason = res.termination.reason
    if reason in (R.OPTIMAL, R.FEASIBLE):
        x = np.asarray(res.x, dtype=float)
        bad = model.violations(x, tol=tol * max(1.0, float(np.max(np.abs(x), initial=0.0))))
        if bad or not np.all(np.isfinite(x)):
            return f"{reason.name} with a solution that violates {bad or 'finiteness'}"
        if abs(model.evaluate(x) - res.objective) > tol * max(1.0, abs(res.objective)):
            return f"{reason.name} objective {res.objective} but the solution's value is {model.evaluate(x)}"
    if reference is None or reference.termination.reason not in (R.OPTIMAL, R.FEASIBLE):
        return None
    xr = np.asarray(reference.x, dtype=float)
    if model.violations(xr, tol=tol) or not np.all(np.isfinite(xr)):
        return None
    vr = model.evaluate(xr)
    if reason == R.INFEASIBLE:
        return f"INFEASIBLE, but {reference.backend} found a solution of value {vr} that satisfies the model"
    better = (lambda a, b: a > b) if model.maximize else (lambda a, b: a < b)
    if math.isfinite(res.bound) and better(vr, res.bound) and abs(vr - res.bound) > tol * max(1.0, abs(vr)):
        return f"{reason.name} with bound {res.bound}, beaten by a solution of value {vr} ({reference.backend})"
    if reason == R.OPTIMAL and reference.termination.reason == R.OPTIMAL \
            and abs(res.objective - reference.objective) > 1e-6 * max(1.0, abs(vr)):
        return f"OPTIMAL {res.objective}, but {reference.backend} proves {reference.objective}"
    return None


def _linear_model_entries() -> list[EntryPoint]:
    from .. import solve
    from ..model import LinearModel

    def path(m: LinearModel) -> Any:
        return solve(m, "highs", time_limit=2.0)

    def add_variables(**kw: Any) -> Any:
        m = LinearModel("m", sense="maximize")
        block = m.add_variables(**kw)
        m.add_constraints("c", {block.name: np.ones((1, block.size))}, upper=5)
        m.set_objective({block.name: np.ones(block.size)})
        return path(m)

    def add_constraints(**kw: Any) -> Any:
        m = LinearModel("m", sense="maximize")
        m.add_variables("x", 3, upper=10)
        m.add_constraints(**kw)
        m.set_objective({"x": [1, 1, 1]})
        return path(m)

    def set_objective(**kw: Any) -> Any:
        m = LinearModel("m")
        m.add_variables("x", 3, upper=10)
        m.add_constraints("c", {"x": [[1, 1, 1]]}, lower=1)
        m.set_objective(**kw)
        return path(m)

    def checked(backend: str, reference: str) -> Callable[..., Any]:
        def call(**kw: Any) -> Any:
            m = LinearModel.from_arrays(**kw)
            res = solve(m, backend, time_limit=2.0)
            try:
                ref = solve(m, reference, time_limit=2.0)
            except Exception:
                ref = None
            return m, res, ref

        return call

    def prep_coeffs(f: str, v: Any, kw: dict[str, Any]) -> Any:
        return {"x": v} if f == "coeffs" else v

    arrays_valid = lambda: {  # noqa: E731 - max 3a + 4b + 5c, 2a + 3b + 4c <= 7, integer in [0, 1]: optimum 9
        "c": [3.0, 4.0, 5.0], "A": [[2.0, 3.0, 4.0]], "row_lower": [-np.inf], "row_upper": [7.0], "col_lower": 0.0,
        "col_upper": 1.0, "integrality": [1, 1, 1], "sense": "maximize", "constant": 0.0, "name": "k"}
    arrays_fields = {"c": "vector3", "A": "matrix1x3?", "row_lower": "lower", "row_upper": "upper",
                     "col_lower": "lower", "col_upper": "upper", "integrality": "vector3", "sense": "choice",
                     "constant": "real", "name": "model_name"}

    def arrays_accept(out: Any) -> str | None:
        return lies(*out)

    def prep_rows(f: str, v: Any, kw: dict[str, Any]) -> Any:
        # row bounds are one per row (1 row): a list of 3 is a shape error, a scalar broadcasts
        if f in ("row_lower", "row_upper") and isinstance(v, list) and len(v) == 3:
            return v[:1]
        return v

    return [
        EntryPoint("LinearModel.add_variables", add_variables,
                   lambda: {"name": "x", "shape": 3, "lower": 0.0, "upper": 10.0, "kind": "integer",
                            "labels": ["a", "b", "c"]},
                   {"name": "name", "shape": "shape", "lower": "lower", "upper": "upper", "kind": "choice",
                    "labels": "labels3"}),
        EntryPoint("LinearModel.add_constraints", add_constraints,
                   lambda: {"name": "c", "coeffs": {"x": [[1.0, 2.0, 3.0]]}, "lower": 0.0, "upper": 7.0,
                            "labels": ["r"]},
                   {"name": "name", "coeffs": "matrix1x3", "lower": "lower", "upper": "upper"},
                   prepare=prep_coeffs),
        EntryPoint("LinearModel.set_objective", set_objective,
                   lambda: {"coeffs": {"x": [1.0, 2.0, 3.0]}, "sense": "minimize", "constant": 0.0},
                   {"coeffs": "vector3", "sense": "choice", "constant": "real"}, prepare=prep_coeffs),
        EntryPoint("LinearModel.from_arrays+highs", checked("highs", "scipy"), arrays_valid, arrays_fields, accept=arrays_accept,
                   prepare=prep_rows),
        EntryPoint("LinearModel.from_arrays+scipy", checked("scipy", "highs"), arrays_valid,
                   {k: arrays_fields[k] for k in ("A", "row_lower", "row_upper", "col_lower", "col_upper")},
                   accept=arrays_accept, prepare=prep_rows),
    ]


def _solve_entries() -> list[EntryPoint]:
    from .. import solve
    from ..backends import available_backends

    out = []
    for backend in available_backends():
        if backend == "mckp":
            continue  # the knapsack has no one-configuration-per-job structure; mckp is fuzzed through Sia below

        def call(backend: str = backend, **kw: Any) -> Any:
            return solve(_knapsack(), backend, **kw)

        fields = {"time_limit": "time_limit", "mip_rel_gap": "gap", "threads": "threads", "seed": "seed"}
        from ..backends import get_backend

        if get_backend(backend).capabilities.warm_start:
            fields["warm_start"] = "warm_start3"
        out.append(EntryPoint(f"solve[{backend}]", call, lambda: {"time_limit": 5.0}, fields, accept=_solve_honest))
    out.append(EntryPoint("solve(backend=)", lambda **kw: solve(_knapsack(), **kw),
                          lambda: {"backend": "highs", "time_limit": 5.0}, {"backend": "backend"},
                          accept=_solve_honest))
    return out


def _sia_entries() -> list[EntryPoint]:
    from .. import sia, solve

    def goodput(job: Any, config: Any) -> float:
        return float(config.n_gpus) ** 0.5

    def problem(cluster: Any = None, jobs: Any = None, **kw: Any) -> Any:
        cluster = cluster if cluster is not None else sia.Cluster((sia.GpuType("t4", 4, 2), sia.GpuType("a100", 8, 1)))
        jobs = jobs if jobs is not None else [sia.Job("j0"), sia.Job("j1", max_profiled_gpus=4)]
        kw.setdefault("goodput", goodput)
        p = sia.SiaProblem(cluster, jobs, **kw)
        return solve(p.build(), "highs", time_limit=2.0)

    def gpu_type(**kw: Any) -> Any:
        return problem(cluster=sia.Cluster((sia.GpuType(**kw),)))

    def job(**kw: Any) -> Any:
        return problem(jobs=[sia.Job(**kw), sia.Job("other")])

    def config(**kw: Any) -> Any:
        return problem(jobs=[sia.Job("j0", current=sia.Config(**kw), max_profiled_gpus=4), sia.Job("other")])

    def prep_problem(f: str, v: Any, kw: dict[str, Any]) -> Any:
        tables = {"nan-table": np.nan, "inf-table": np.inf, "neg-table": -1.0}
        if f == "goodput" and isinstance(v, str) and v in tables:
            return lambda job, config: tables[v]
        if f == "jobs" and v == "dup":
            return [sia.Job("a"), sia.Job("a")]
        return v

    def generate(**kw: Any) -> Any:
        return sia.generate_instance(**kw).problem().build()

    model = functools.cache(lambda: sia.generate_instance(64, 0).problem().build())

    def mckp(**kw: Any) -> Any:
        return solve(model(), "mckp", **kw)

    return [
        EntryPoint("sia.GpuType", gpu_type, lambda: {"name": "t4", "gpus_per_node": 4, "nodes": 2},
                   {"name": "name", "gpus_per_node": "count", "nodes": "count"}),
        EntryPoint("sia.Job", job, lambda: {"id": "j0", "kind": "adaptive", "max_profiled_gpus": 2},
                   {"id": "name", "kind": "choice", "min_gpus": "demand", "max_gpus": "cap?", "scale_unit": "count",
                    "max_profiled_gpus": "nonneg_int", "allowed_types": "names", "age_s": "nonneg_float",
                    "restarts": "nonneg_int", "restart_cost_s": "nonneg_float", "preemptible": "bool",
                    "rigid_gpus": "cap?", "batch_size": "pos_float?"}),
        EntryPoint("sia.Config", config, lambda: {"n_nodes": 1, "n_gpus": 2, "gpu_type": "t4"},
                   {"n_nodes": "count", "n_gpus": "count", "gpu_type": "known_name"}),
        EntryPoint("sia.SiaProblem", problem, lambda: {"p": -0.5, "lam": 1.1},
                   {"p": "real", "lam": "pos_float", "max_gpus_per_job": "cap?", "goodput": "goodput",
                    "jobs": "items"}, prepare=prep_problem),
        EntryPoint("sia.cluster", lambda **kw: sia.cluster(**kw), lambda: {"gpus": 64}, {"gpus": "count"}),
        EntryPoint("sia.generate_instance", generate, lambda: {"gpus": 64, "seed": 0},
                   {"gpus": "count", "seed": "seed", "jobs": "count?", "load": "choice", "p": "real",
                    "lam": "pos_float"}),
        EntryPoint("solve[mckp]", mckp, lambda: {"time_limit": 2.0},
                   {"time_limit": "time_limit", "mip_rel_gap": "gap", "threads": "threads", "seed": "seed"}),
    ]


def _synergy_entries() -> list[EntryPoint]:
    from .. import synergy

    cached = functools.cache(lambda: synergy.generate_instance(16, 0))

    def base() -> Any:
        return copy.deepcopy(cached())

    def server(**kw: Any) -> Any:
        inst = base()
        return synergy.synergy_tune([synergy.Server(**kw), *inst.servers[1:]], inst.jobs)

    def job(**kw: Any) -> Any:
        inst = base()
        jobs = [synergy.SynergyJob(**kw), *inst.jobs[1:]]
        synergy.build_p1(jobs, 16, 48.0, 1000.0)
        return synergy.synergy_tune(inst.servers, jobs)

    def job_valid() -> dict[str, Any]:
        j = base().jobs[0]
        return {"id": j.id, "gpus": j.gpus, "cpu_grid": j.cpu_grid.copy(), "mem_grid": j.mem_grid.copy(),
                "throughput": j.throughput.copy()}

    def generate(**kw: Any) -> Any:
        inst = synergy.generate_instance(**kw)
        return synergy.proportional(inst.servers, inst.jobs)

    return [
        EntryPoint("synergy.Server", server, lambda: {"gpus": 8, "cpus": 24.0, "mem_gb": 500.0},
                   {"gpus": "count", "cpus": "pos_float", "mem_gb": "pos_float"}),
        EntryPoint("synergy.SynergyJob", job, job_valid,
                   {"id": "name", "gpus": "count", "cpu_grid": "grid9", "mem_grid": "grid5",
                    "throughput": "grid9x5"}),
        EntryPoint("synergy.generate_instance", generate, lambda: {"gpus": 16, "seed": 0},
                   {"gpus": "count", "seed": "seed", "load": "pos_float", "source": "choice",
                    "gpus_per_server": "count", "cpus_per_server": "pos_float", "mem_per_server": "pos_float"}),
        EntryPoint("synergy.default_cluster", lambda **kw: synergy.default_cluster(**kw), lambda: {"gpus": 16},
                   {"gpus": "count", "gpus_per_server": "count", "cpus_per_server": "pos_float",
                    "mem_per_server": "pos_float"}),
    ]


def _heterps_entries() -> list[EntryPoint]:
    import dataclasses

    from .. import heterps

    @functools.cache
    def base() -> Any:  # frozen
        return heterps.generate("ctrdnn", 0, cpus=8, gpus=2)

    def run(p: Any) -> Any:
        return heterps.solve_greedy(p)

    def resource(**kw: Any) -> Any:
        p = base()
        return run(dataclasses.replace(p, types=(heterps.ResourceType(**kw), p.types[1])))

    def layer(**kw: Any) -> Any:
        p = base()
        return run(dataclasses.replace(p, layers=(heterps.Layer(**kw), *p.layers[1:])))

    def layer_valid() -> dict[str, Any]:
        lay = base().layers[0]
        return {f.name: copy.deepcopy(getattr(lay, f.name)) for f in dataclasses.fields(lay) if f.init}

    def problem(**kw: Any) -> Any:
        p = base()
        fields = {f.name: getattr(p, f.name) for f in dataclasses.fields(p) if f.init}
        return run(heterps.HeterPSProblem(**{**fields, **kw}))

    def prep_problem(f: str, v: Any, kw: dict[str, Any]) -> Any:
        if f == "layers" and v == "dup":
            lay = base().layers[0]
            return (lay, lay)
        return v

    def generate(**kw: Any) -> Any:
        return run(heterps.generate(**kw))

    def exact(**kw: Any) -> Any:
        return heterps.solve_exact(heterps.generate("ctrdnn", 0, **kw), time_limit=2.0)

    return [
        EntryPoint("heterps.ResourceType", resource, lambda: {"name": "CPU", "price_per_hour": 0.04, "limit": 8},
                   {"name": "known_name", "price_per_hour": "nonneg_float", "limit": "count"}),
        EntryPoint("heterps.Layer", layer, layer_valid,
                   {"name": "name", "kind": "choice", "oct": "per_type", "odt": "per_type", "alpha": "fraction",
                    "beta": "fraction", "input_size": "nonneg_float", "weight_size": "nonneg_float"}),
        EntryPoint("heterps.HeterPSProblem", problem, dict,
                   {"batch_size": "pos_float", "base_batch": "pos_float", "samples": "pos_float",
                    "epochs": "pos_float", "throughput_limit": "nonneg_float", "layers": "items"},
                   prepare=prep_problem),
        EntryPoint("heterps.generate", generate, lambda: {"model": "ctrdnn", "seed": 0, "cpus": 8, "gpus": 2},
                   {"model": "known_name", "seed": "seed", "cpus": "count", "gpus": "count",
                    "limit_fraction": "fraction", "batch_size": "count", "samples": "pos_float", "epochs": "pos_float"}),
        EntryPoint("heterps.solve_exact(generate())", exact, lambda: {"cpus": 8, "gpus": 2},
                   {"cpus": "count", "gpus": "count"}),
    ]


def _hived_entries() -> list[EntryPoint]:
    from importlib import resources

    from .. import hived

    @functools.cache
    def config() -> dict[str, Any]:
        import yaml

        return yaml.safe_load((resources.files("schedopt.hived") / "examples" / "example.yaml").read_text())

    def example() -> tuple[Any, Any]:
        return hived.load_hived_config(copy.deepcopy(config()))

    def request(**kw: Any) -> Any:
        cluster, vcs = example()
        return hived.BuddyAllocator(cluster, vcs).allocate(hived.Request(**kw))

    def request_valid() -> dict[str, Any]:
        _, vcs = example()
        vc = vcs[0]
        return {"vc": vc.name, "chain": "V100-RACK", "gpus_per_pod": 1, "pods": 1, "priority": "guaranteed"}

    def vc(**kw: Any) -> Any:
        cluster, vcs = example()
        return hived.BuddyAllocator(cluster, [hived.VirtualCluster(**kw), *vcs[1:]]).virtual_free

    def vc_valid() -> dict[str, Any]:
        v = example()[1][0]
        return {"name": v.name, "cells": dict(v.cells), "weight": v.weight}

    def generate(**kw: Any) -> Any:
        cluster = hived.generate_cluster(**kw)
        return hived.BuddyAllocator(cluster, hived.generate_vcs(cluster, 2, 0))

    return [
        EntryPoint("hived.Request", request, request_valid,
                   {"vc": "known_name", "chain": "known_name", "gpus_per_pod": "demand", "pods": "demand",
                    "priority": "choice", "name": "name?"}),
        EntryPoint("hived.VirtualCluster", vc, vc_valid, {"name": "name", "cells": "cells", "weight": "pos_float"}),
        EntryPoint("hived.generate_cluster", generate, lambda: {"gpus": 64},
                   {"gpus": "count", "gpu_types": "names", "nodes_per_rack": "count", "sockets_per_node": "count",
                    "pcie_per_socket": "count", "gpus_per_pcie": "count"}),
    ]


def _gandiva_entries() -> list[EntryPoint]:
    from .. import gandiva

    def node(**kw: Any) -> Any:
        state = gandiva.ClusterState([gandiva.Node(**kw), gandiva.Node("other", 4)])
        a = gandiva.allocate(state, gandiva.GandivaJob("j", 1))
        return a, gandiva.check_state(state)

    def job(**kw: Any) -> Any:
        state = gandiva.ClusterState(gandiva.uniform_cluster(2, 4))
        j = gandiva.GandivaJob(**kw)
        a = gandiva.allocate(state, j)
        return a, gandiva.check_state(state)

    def state_ok(out: Any) -> str | None:
        _, problems = out
        return f"the state checker then reports {problems[:2]}" if problems else None

    def cluster_state(**kw: Any) -> Any:
        state = gandiva.ClusterState(**kw)
        return gandiva.allocate(state, gandiva.GandivaJob("j", 1))

    def prep_state(f: str, v: Any, kw: dict[str, Any]) -> Any:
        return [gandiva.Node("a", 4), gandiva.Node("a", 4)] if v == "dup" else v

    def uniform(**kw: Any) -> Any:
        return gandiva.ClusterState(gandiva.uniform_cluster(**kw)).free_counts()

    def trace(**kw: Any) -> Any:
        jobs = gandiva.generate_trace(**kw)
        state = gandiva.ClusterState(gandiva.uniform_cluster(4, 4))
        return gandiva.pack_greedy(state, jobs[:4])

    def profiles(**kw: Any) -> Any:
        p = gandiva.Profiles(**kw)
        jobs = gandiva.generate_trace(4, 0, profiles=p)
        return gandiva.pack_greedy(gandiva.ClusterState(gandiva.uniform_cluster(2, 4)), jobs)

    def profiles_valid() -> dict[str, Any]:
        p = gandiva.load_profiles()
        return {"types": tuple(p.types), "solo_throughput": np.array(p.solo_throughput),
                "utilization": np.array(p.utilization), "memory": np.array(p.memory), "factor": np.array(p.factor)}

    return [
        EntryPoint("gandiva.Node", node, lambda: {"name": "n0", "gpus": 4, "gpu_memory": 1.0},
                   {"name": "name", "gpus": "count", "gpu_memory": "pos_float"}, accept=state_ok),
        EntryPoint("gandiva.GandivaJob", job, lambda: {"id": "j", "gpus": 2},
                   {"id": "name", "gpus": "demand", "utilization": "fraction", "memory": "fraction",
                    "throughput": "pos_float", "duration": "pos_float", "arrival": "nonneg_float", "elastic": "bool",
                    "max_gpus": "cap?"}, accept=state_ok),
        EntryPoint("gandiva.ClusterState", cluster_state, lambda: {"nodes": gandiva.uniform_cluster(2, 4)},
                   {"nodes": "items"}, prepare=prep_state),
        EntryPoint("gandiva.uniform_cluster", uniform, lambda: {"n_nodes": 2, "gpus_per_node": 4},
                   {"n_nodes": "count", "gpus_per_node": "count", "gpu_memory": "pos_float"}),
        EntryPoint("gandiva.generate_trace", trace, lambda: {"n_jobs": 8, "seed": 0},
                   {"n_jobs": "count", "seed": "seed", "arrival_rate": "pos_float", "duration_scale": "pos_float",
                    "max_gpus": "cap?", "elastic_fraction": "fraction"}),
        EntryPoint("gandiva.Profiles", profiles, profiles_valid,
                   {"types": "names", "solo_throughput": "grid5", "utilization": "grid5", "memory": "grid5",
                    "factor": "grid9x5"}),
    ]


def _goodput_entries() -> list[EntryPoint]:
    import dataclasses

    from .. import goodput, zoo

    def load(**kw: Any) -> Any:
        m = zoo.load_model(**kw)
        return m.goodput("t4", nodes=np.array([1]), replicas=np.array([2]))

    def params(**kw: Any) -> Any:
        m = zoo.load_model("cifar10")
        m = dataclasses.replace(m, params={**m.params, "t4": goodput.ThroughputParams(**kw)})
        return m.goodput("t4", nodes=np.array([1, 2]), replicas=np.array([2, 8]))

    def params_valid() -> dict[str, Any]:
        p = zoo.load_model("cifar10").params["t4"]
        return {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}

    return [
        EntryPoint("zoo.load_model", load, lambda: {"name": "cifar10"}, {"name": "known_name"}),
        EntryPoint("goodput.ThroughputParams", params, params_valid,
                   {k: "nonneg_float" for k in ("alpha_c", "beta_c", "alpha_n", "beta_n", "alpha_r", "beta_r")}
                   | {"gamma": "pos_float"}),
    ]


class CliExit(SchedoptError):
    """The command line answered with a message and a non-zero exit status (a usage error or a named error)."""


def _cli_entries() -> list[EntryPoint]:
    from .. import cli, instances, sia

    @functools.cache
    def tmp() -> Path:  # made on first use, removed at exit
        import atexit
        import shutil

        d = Path(tempfile.mkdtemp(prefix="schedopt-fuzz-"))
        atexit.register(shutil.rmtree, d, True)
        instances.save(sia.generate_instance(64, 0), d / "sia64.json")
        return d

    def run(*argv: str) -> str:
        import io

        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli.main(list(argv))
        except SystemExit as exc:  # argparse's usage error
            code = exc.code if isinstance(exc.code, int) else 2
        if code:
            raise CliExit(f"exit {code}: {err.getvalue().strip()[-200:]}")
        return out.getvalue()

    def options(kw: dict[str, Any]) -> list[str]:
        return [a for k, v in kw.items() for a in (f"--{k.replace('_', '-')}", str(v))]

    def generate(problem: Any = "sia", **kw: Any) -> Any:
        return run("generate", str(problem), *options(kw), "-o", str(tmp() / "out.json"))

    def solve(**kw: Any) -> Any:
        return run("solve", str(tmp() / "sia64.json"), *options(kw))

    def demo(**kw: Any) -> Any:
        return run("demo", *options(kw))

    return [
        EntryPoint("cli generate", generate, lambda: {"problem": "sia", "gpus": 64, "seed": 0},
                   {"problem": "known_name", "gpus": "count", "seed": "seed"}),
        EntryPoint("cli solve", solve, lambda: {"backend": "highs", "time_limit": 10},
                   {"backend": "backend", "time_limit": "time_limit"}),
        EntryPoint("cli demo", demo, lambda: {"gpus": 64, "seed": 0, "time_limit": 10},
                   {"gpus": "count", "seed": "seed", "backend": "backend", "time_limit": "time_limit"}),
    ]


# ------------------------------------------------------------------ loaders: instance documents and files
def _leaves(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, value) of every leaf and container of a JSON document; lists only through their first element."""
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(obj, list) and obj:
        yield from _leaves(obj[0], (*path, 0))


def _path_text(path: tuple[Any, ...]) -> str:
    return "data" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = copy.deepcopy(doc)
    if not path:
        return value
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    if value is MISSING:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


_JSON_SCALAR_TYPES = _bads(("null", None, False), ("'abc'", "abc"), ("[]", []), ("{}", {}))
# null, or the other empty container, may mean "none" in a container's place; a string never does
_JSON_CONTAINER_TYPES = _bads(("null", None, False), ("'abc'", "abc"), ("[]", [], False), ("{}", {}, False))
_JSON_NUMBERS = _bads(("NaN", math.nan), ("Infinity", math.inf), ("-1", -1, False), ("0", 0, False),
                      ("1e300", 1e300, False), ("10**30", 10**30, False), ("1.5", 1.5, False))
_JSON_KEYS = _bads(("unknown key", "unknown key"), ("missing key", MISSING, False))


def document_cases(data: dict[str, Any], family: str) -> list[Case]:
    """Mutations of an instance's ``data``: ``types`` (a leaf replaced by another JSON type), ``numbers`` (a number
    replaced by NaN, inf, negative, zero, huge, fractional) or ``keys`` (an unknown key added to an object, a key
    removed). The case's field is the path written ``data.jobs[0].gpus``; its value is applied by
    :func:`apply_document_case`."""
    out = []
    for path, v in _leaves(data):
        where = _path_text(path)
        if family == "types" and path and v is not None:
            bads = _JSON_CONTAINER_TYPES if isinstance(v, (dict, list)) else _JSON_SCALAR_TYPES
            out += [Case(where, b) for b in bads if type(b.value) is not type(v)]
        elif family == "numbers" and isinstance(v, (int, float)) and not isinstance(v, bool):
            out += [Case(where, b) for b in _JSON_NUMBERS if b.value != v]
        elif family == "keys" and isinstance(v, dict):
            out.append(Case(where, _JSON_KEYS[0]))
            out += [Case(f"{where}.{k}", _JSON_KEYS[1]) for k in v]
    return out


def apply_document_case(data: dict[str, Any], case: Case) -> dict[str, Any]:
    path = _parse_path(case.field)
    if case.bad.label == "unknown key":
        parent = data
        for p in path:
            parent = parent[p]
        return _set(data, (*path, "no_such_key"), 1)
    return _set(data, path, case.bad.fresh())


def _parse_path(text: str) -> tuple[Any, ...]:
    out: list[Any] = []
    for part in text.removeprefix("data").replace("[", ".[").split("."):
        if not part:
            continue
        out.append(int(part[1:-1]) if part.startswith("[") else part)
    return tuple(out)


#: the instance each problem's loader is fuzzed on: (generator parameters) -- small, so a build takes milliseconds
DOCUMENT_SOURCES: dict[str, dict[str, Any]] = {
    "sia": {"gpus": 64, "seed": 0},
    "synergy": {"gpus": 16, "seed": 0},
    "heterps": {"gpus": 8, "seed": 0},
    "hived": {"gpus": 16, "seed": 0},
    "gandiva": {"gpus": 8, "seed": 0},
}


def document_entry(problem: str) -> tuple[EntryPoint, dict[str, Any]]:
    """The loader of ``problem``'s instance documents as an entry point: ``call(data=...)`` reads the document
    through :func:`schedopt.instances.from_document`, then builds the model where the problem has one (or sizes
    it)."""
    from ..instances import SCHEMA, VERSION, from_document
    from ..problem import get_problem

    io = get_problem(problem)
    assert io.generate is not None
    data = io.to_data(io.generate(**DOCUMENT_SOURCES[problem]))
    data = json.loads(json.dumps(data))

    def call(data: Any) -> Any:
        spec = from_document({"schema": SCHEMA, "version": VERSION, "problem": problem, "data": data})
        if io.build is not None:
            return io.build(spec)
        return io.size(spec) if io.size is not None else spec

    return EntryPoint(f"instances.from_document[{problem}]", call, lambda: {"data": copy.deepcopy(data)},
                      {"data": "document"}, prepare=None), data


def run_document_case(problem: str, case: Case, timeout: float = 5.0) -> Outcome:
    entry, data = document_entry(problem)
    mutated = apply_document_case(data, case)
    e = EntryPoint(entry.name, entry.call, lambda: {"data": mutated}, entry.fields)
    out = run_case(e, None, timeout)
    status = out.status
    if status == "ok" and case.bad.reject:
        status = "silent"
    return Outcome(status, entry.name, case, out.detail or ("accepted" if status == "silent" else ""), out.seconds)


#: file-level inputs every loader must answer with a named error: (label, how to make it in a directory)
FILE_CASES: dict[str, Callable[[Path], Path]] = {
    "missing file": lambda d: d / "no-such-file.json",
    "a directory": lambda d: d,
    "empty file": lambda d: _write(d / "empty.json", b""),
    "truncated": lambda d: _write(d / "cut.json", b'{"schema": "schedopt.instance", "vers'),
    "not UTF-8": lambda d: _write(d / "latin1.json", '{"schema": "caf\u00e9"}'.encode("latin-1")),
    "binary": lambda d: _write(d / "bin.json", bytes(range(256))),
    "a JSON list": lambda d: _write(d / "list.json", b"[1, 2]"),
    "duplicate keys": lambda d: _write(d / "dup.json", b'{"schema": "schedopt.instance", "schema": "x", "version": 1}'),
}

YAML_CASES: dict[str, Callable[[Path], Path]] = {
    "missing file": lambda d: d / "no-such-file.yaml",
    "a directory": lambda d: d,
    "empty file": lambda d: _write(d / "empty.yaml", b""),
    "truncated": lambda d: _write(d / "cut.yaml", b"physicalCluster:\n  cellTypes: {a: [1,"),
    "not UTF-8": lambda d: _write(d / "latin1.yaml", "physicalCluster: caf\u00e9\n".encode("latin-1")),
    "a YAML list": lambda d: _write(d / "list.yaml", b"- 1\n- 2\n"),
    "duplicate keys": "duplicate-keys",  # type: ignore[dict-item]  # built from the shipped example below
    "huge childCellNumber": "huge-children",  # type: ignore[dict-item]
}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _hived_example_text() -> str:
    from importlib import resources

    return (resources.files("schedopt.hived") / "examples" / "example.yaml").read_text()


def run_file_case(loader: str, label: str, timeout: float = 5.0) -> Outcome:
    """``loader``: ``instances.load`` or ``hived.load_hived_config``; ``label``: a key of FILE_CASES / YAML_CASES.
    Every one of these files is bad: the loader must raise a named error."""
    from .. import hived, instances

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        if loader == "instances.load":
            path = FILE_CASES[label](d)
            fn: Callable[[Path], Any] = instances.load
        else:
            maker = YAML_CASES[label]
            if maker == "duplicate-keys":
                text = _hived_example_text()
                head, _, rest = text.partition("physicalCluster:")
                path = _write(d / "dup.yaml", (head + "virtualClusters: {}\nphysicalCluster:" + rest).encode()
                              if "virtualClusters:" in text else text.encode() + b"\nphysicalCluster: {}\n")
            elif maker == "huge-children":
                text = _hived_example_text()
                import re

                path = _write(d / "huge.yaml", re.sub(r"childCellNumber: *\d+", "childCellNumber: 1000000000000",
                                                      text, count=1).encode())
            else:
                path = maker(d)
            fn = hived.load_hived_config
        entry = EntryPoint(loader, lambda: fn(path), dict, {})
        out = run_case(entry, None, timeout)
    case = Case("path", Bad(label, None))
    status = "silent" if out.status == "ok" else out.status
    return Outcome(status, loader, case, out.detail or ("loaded" if status == "silent" else ""), out.seconds)


# ------------------------------------------------------------------ every entry point, and a survey
def entry_points() -> list[EntryPoint]:
    """Every fuzzed entry point (problem packages that fail to import are left out and reported by the caller)."""
    out: list[EntryPoint] = []
    for make in (_linear_model_entries, _solve_entries, _sia_entries, _synergy_entries, _heterps_entries,
                 _hived_entries, _gandiva_entries, _goodput_entries, _cli_entries):
        out += make()
    return out


@dataclass
class Survey:
    outcomes: list[Outcome] = field(default_factory=list)

    def counts(self) -> Counter[str]:
        return Counter(o.status for o in self.outcomes)

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.failed]


def survey(timeout: float = 5.0, only: str | None = None, progress: bool = False) -> Survey:
    """Run every catalog case of every entry point, every loader mutation and every bad file."""
    s = Survey()

    def add(o: Outcome) -> None:
        s.outcomes.append(o)
        if progress and o.failed:
            print(o.repro(), flush=True)

    for e in entry_points():
        if only and only not in e.name:
            continue
        base = run_case(e, None, timeout)
        if base.status != "ok":
            add(Outcome("raw", e.name, None, f"the valid input fails: {base.detail}"))
            continue
        for c in all_cases(e):
            add(run_case(e, c, timeout))
    for problem in DOCUMENT_SOURCES:
        name = f"instances.from_document[{problem}]"
        if only and only not in name:
            continue
        _, data = document_entry(problem)
        for family in ("types", "numbers", "keys"):
            for c in document_cases(data, family):
                add(run_document_case(problem, c, timeout))
    for loader, labels in (("instances.load", FILE_CASES), ("hived.load_hived_config", YAML_CASES)):
        if only and only not in loader:
            continue
        for label in labels:
            add(run_file_case(loader, label, timeout))
    return s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m schedopt.testing.fuzz", description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds per input (default 5)")
    ap.add_argument("--only", default=None, help="entry points whose name contains this text")
    ap.add_argument("--quiet", action="store_true", help="only the counts")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    s = survey(args.timeout, args.only, progress=not args.quiet)
    counts = s.counts()
    total = sum(counts.values())
    print(f"{total} inputs in {time.perf_counter() - t0:.0f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if s.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
