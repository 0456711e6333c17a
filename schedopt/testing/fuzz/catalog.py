"""Bad values per kind of field, and hypothesis strategies over them."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st


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


def bads(*items: tuple[str, Any] | tuple[str, Any, bool]) -> tuple[Bad, ...]:
    return tuple(Bad(*it) for it in items)


_TYPES = bads(("None", None), ("'abc'", "abc"), ("''", ""), ("[]", []), ("{}", {}), ("object()", object()))
_NONFINITE = bads(("nan", math.nan), ("inf", math.inf), ("-inf", -math.inf))
_SIZE = bads(("-1", -1), ("0", 0), ("1.5", 1.5), ("1e300", 1e300), ("2**64", 2**64), ("10**18", 10**18),
              ("-(2**70)", -(2**70)), ("'3'", "3", False), ("True", True, False), ("np.int64(2)", np.int64(2), False))

#: bad values per kind of field
CATALOG: dict[str, tuple[Bad, ...]] = {
    # an integer count that must be >= 1 (GPUs, nodes, jobs)
    "count": _TYPES + _NONFINITE + _SIZE,
    # the same, None allowed (its default)
    "count?": _TYPES[1:] + _NONFINITE + _SIZE,
    # an integer demand >= 1 (GPUs a job asks for, pods): a huge one may be accepted and left unmet
    "demand": _TYPES + _NONFINITE + bads(("-1", -1), ("0", 0), ("1.5", 1.5), ("1e300", 1e300), ("2**64", 2**64, False),
                                          ("10**18", 10**18, False), ("'3'", "3", False), ("True", True, False)),
    # an optional cap (None: no cap): a huge one means no cap
    "cap?": _TYPES[1:] + _NONFINITE + bads(("-1", -1), ("0", 0), ("1.5", 1.5), ("1e300", 1e300), ("2**64", 2**64, False),
                                            ("10**18", 10**18, False), ("'3'", "3", False)),
    # an integer >= 0 (restarts, profiled GPUs, limits)
    "nonneg_int": _TYPES + _NONFINITE + bads(("-1", -1), ("1.5", 1.5), ("1e300", 1e300), ("2**64", 2**64),
                                              ("10**18", 10**18), ("'3'", "3", False), ("0", 0, False)),
    # any integer (a seed)
    "seed": bads(("None", None, False), ("'abc'", "abc"), ("[]", []), ("nan", math.nan), ("1.5", 1.5),
                  ("-1", -1, False), ("2**64", 2**64, False), ("-(2**70)", -(2**70), False)),
    # a real > 0 (a price, a batch size, a throughput)
    "pos_float": _TYPES + _NONFINITE + bads(("-1", -1.0), ("0", 0.0), ("-0.0", -0.0), ("1e-300", 1e-300, False),
                                             ("1e300", 1e300, False), ("2**64", 2**64, False), ("'3'", "3", False)),
    "pos_float?": _TYPES[1:] + _NONFINITE + bads(("-1", -1.0), ("0", 0.0), ("1e300", 1e300, False)),
    # a real >= 0 (an age, a cost, a time)
    "nonneg_float": _TYPES + _NONFINITE + bads(("-1", -1.0), ("-1e-300", -1e-300), ("0", 0.0, False),
                                                ("1e300", 1e300, False), ("2**64", 2**64, False)),
    # a real in [0, 1]
    "fraction": _TYPES + _NONFINITE + bads(("-0.1", -0.1), ("1.5", 1.5), ("1e300", 1e300), ("0", 0.0, False),
                                            ("1", 1.0, False)),
    # any finite real
    "real": _TYPES + _NONFINITE + bads(("1e300", 1e300, False), ("-1e300", -1e300, False), ("0", 0.0, False),
                                        ("2**64", 2**64, False)),
    # a non-empty name
    "name": bads(("None", None), ("''", ""), ("[]", []), ("{}", {}), ("['a']", ["a"]), ("nan", math.nan),
                  ("3", 3, False), ("' '", " ", False), ("'x'*10**5", "x" * 10**5, False), ("'\\x00'", "\x00", False)),
    # a model's name (None: the default)
    "model_name": bads(("[]", []), ("{}", {}), ("nan", math.nan), ("None", None, False), ("3", 3, False),
                        ("''", "", False)),
    # an optional name (None: a generated one)
    "name?": bads(("''", ""), ("[]", []), ("{}", {}), ("['a']", ["a"]), ("nan", math.nan), ("3", 3, False)),
    # a name that must be one of a known set (a GPU type, a model, a VC)
    "known_name": bads(("None", None), ("''", ""), ("'no-such-name'", "no-such-name"), ("[]", []), ("['a']", ["a"]),
                        ("3", 3), ("nan", math.nan)),
    # one of a few words (a kind, a sense)
    "choice": bads(("None", None), ("''", ""), ("'no-such-choice'", "no-such-choice"), ("3", 3), ("[]", []),
                    ("nan", math.nan)),
    # the same, None allowed (its default: keep the current one, as set_objective's sense)
    "choice?": bads(("''", ""), ("'no-such-choice'", "no-such-choice"), ("3", 3), ("[]", []), ("nan", math.nan),
                     ("None", None, False)),
    # a list of known names
    "names": bads(("'abc'", "abc"), ("[None]", [None]), ("[3]", [3]), ("['no-such-name']", ["no-such-name"]),
                   ("['', '']", ["", ""]), ("{}", {}), ("3", 3), ("[]", [], False)),
    # a HiveD priority: "guaranteed", "opportunistic" or an integer in -1..1000
    "priority": bads(("None", None), ("''", ""), ("'no-such-choice'", "no-such-choice"), ("[]", []), ("nan", math.nan),
                      ("3", 3, False), ("1001", 1001), ("-2", -2), ("True", True), ("2**64", 2**64)),
    # a list of free names (any printable word is valid: HiveD's GPU types)
    "free_names": bads(("'abc'", "abc"), ("[None]", [None]), ("[3]", [3]), ("['no-such-name']", ["no-such-name"], False),
                        ("['', '']", ["", ""]), ("{}", {}), ("3", 3), ("[]", []), ("['a', 'a']", ["a", "a"])),
    # a flag
    "bool": bads(("None", None, False), ("'false'", "false"), ("nan", math.nan), ("2", 2, False), ("[]", [])),
    # a lower bound (a scalar or one per element of 3): +inf and NaN mean nothing
    "lower": bads(("nan", math.nan), ("inf", math.inf), ("'abc'", "abc"), ("[0, 0]", [0.0, 0.0]),
                   ("[nan]*3", [math.nan] * 3), ("[None]*3", [None] * 3), ("{}", {}), ("object()", object()),
                   ("-inf", -math.inf, False), ("1e300", 1e300, False), ("-1e300", -1e300, False),
                   ("None", None, False)),
    "upper": bads(("nan", math.nan), ("-inf", -math.inf), ("'abc'", "abc"), ("[1, 1]", [1.0, 1.0]),
                   ("[nan]*3", [math.nan] * 3), ("[None]*3", [None] * 3), ("{}", {}), ("object()", object()),
                   ("inf", math.inf, False), ("1e300", 1e300, False), ("None", None, False)),
    # a vector of 3 reals (objective coefficients)
    "vector3": bads(("None", None), ("'abc'", "abc"), ("[]", []), ("[1, 2]", [1.0, 2.0]), ("[[1, 2, 3]]*2", [[1, 2, 3]] * 2),
                     ("[nan]*3", [math.nan] * 3), ("[inf]*3", [math.inf] * 3), ("[None]*3", [None] * 3),
                     ("['1', '2', '3']", ["1", "2", "3"], False), ("[1e300]*3", [1e300] * 3, False),
                     ("[1e-200]*3", [1e-200] * 3, False), ("[[1], [2, 3]]", [[1], [2, 3]])),
    # a 1 x 3 matrix (constraint coefficients)
    "matrix1x3": bads(("None", None), ("'abc'", "abc"), ("[]", []), ("[[1, 2]]", [[1.0, 2.0]]),
                       ("[[nan]*3]", [[math.nan] * 3]), ("[[inf]*3]", [[math.inf] * 3]), ("[[None]*3]", [[None] * 3]),
                       ("[[1], [2, 3]]", [[1], [2, 3]]), ("{}", {}), ("5", 5), ("[[1e300]*3]", [[1e300] * 3], False),
                       ("[[1e-200, 1, 1]]", [[1e-200, 1, 1]], False)),
    # the same, None allowed (no constraints)
    "matrix1x3?": bads(("'abc'", "abc"), ("[]", []), ("[[1, 2]]", [[1.0, 2.0]]), ("[[nan]*3]", [[math.nan] * 3]),
                        ("[[inf]*3]", [[math.inf] * 3]), ("[[None]*3]", [[None] * 3]), ("[[1], [2, 3]]", [[1], [2, 3]]),
                        ("{}", {}), ("5", 5), ("[[1e300]*3]", [[1e300] * 3], False),
                        ("[[1e-200, 1, 1]]", [[1e-200, 1, 1]], False)),
    # a variable shape
    "shape": _TYPES + bads(("-1", -1), ("1.5", 1.5), ("nan", math.nan), ("10**18", 10**18), ("2**64", 2**64),
                            ("(2, -1)", (2, -1)), ("0", 0, False), ("()", (), False)),
    # labels for 3 items
    "labels3": bads(("'abc'", "abc"), ("['a', 'a', 'b']", ["a", "a", "b"]), ("['a']", ["a"]), ("3", 3),
                     ("[None]*3", [None] * 3, False), ("{}", {})),
    # a time limit in seconds (None and inf: no limit)
    "time_limit": bads(("nan", math.nan), ("-1", -1.0), ("'abc'", "abc"), ("[]", []), ("inf", math.inf, False),
                        ("0", 0.0, False), ("1e300", 1e300, False), ("2**64", 2**64, False), ("True", True, False),
                        ("'1'", "1", False)),
    # a relative gap in [0, 1)
    "gap": bads(("nan", math.nan), ("-1", -1.0), ("1", 1.0), ("inf", math.inf), ("'abc'", "abc"), ("[]", []),
                 ("0", 0.0, False), ("1e-300", 1e-300, False)),
    # a thread count (0: the solver's choice)
    "threads": bads(("-1", -1), ("1.5", 1.5), ("nan", math.nan), ("None", None), ("'abc'", "abc"),
                     ("10**6", 10**6, False), ("2**40", 2**40, False), ("2**64", 2**64, False), ("True", True, False)),
    # a warm start for a model of 3 columns
    "warm_start3": bads(("[nan]*3", [math.nan] * 3), ("[inf]*3", [math.inf] * 3), ("[0, 0]", [0.0, 0.0]),
                         ("'abc'", "abc"), ("[None]*3", [None] * 3), ("{}", {}), ("[1e300]*3", [1e300] * 3, False),
                         ("[-5]*3", [-5.0] * 3, False), ("[0.5]*3", [0.5] * 3, False)),
    # a backend name
    "backend": bads(("'no-such-backend'", "no-such-backend"), ("3", 3), ("['highs']", ["highs"]),
                     ("'HIGHS'", "HIGHS", False), ("''", "", False)),
    # a numeric array of shape (9, 5) (a Synergy throughput matrix)
    "grid9x5": bads(("None", None), ("[]", []), ("zeros((5, 9))", np.zeros((5, 9))),
                     ("full nan", np.full((9, 5), np.nan)), ("full inf", np.full((9, 5), np.inf)),
                     ("full -1", np.full((9, 5), -1.0)), ("strings", [["a"] * 5] * 9), ("'abc'", "abc")),
    # an increasing grid of 9 / 5 positive reals
    "grid9": bads(("None", None), ("[]", []), ("decreasing", list(range(9, 0, -1))), ("[nan]*9", [math.nan] * 9),
                   ("[-1]*9", [-1.0] * 9), ("8 values", list(range(1, 9))), ("strings", ["a"] * 9)),
    "grid5": bads(("None", None), ("[]", []), ("decreasing", [5, 4, 3, 2, 1]), ("[nan]*5", [math.nan] * 5),
                   ("duplicates", [1, 1, 2, 3, 4]), ("4 values", [1, 2, 3, 4]), ("strings", ["a"] * 5)),
    # a mapping name -> real (per resource type)
    "per_type": bads(("None", None), ("{}", {}), ("[]", []), ("{'CPU': nan, 'GPU': nan}", {"CPU": math.nan, "GPU": math.nan}),
                      ("{'CPU': -1, 'GPU': -1}", {"CPU": -1.0, "GPU": -1.0}),
                      ("{'CPU': 'a', 'GPU': 'a'}", {"CPU": "a", "GPU": "a"}),
                      ("{'no-such-type': 1}", {"no-such-type": 1.0}), ("'abc'", "abc")),
    # a mapping cell type -> count (a HiveD virtual cluster)
    "cells": bads(("None", None), ("[]", []), ("{'no-such-cell': 1}", {"no-such-cell": 1}),
                   ("{'V100-NODE': -1}", {"V100-NODE": -1}), ("{'V100-NODE': 10**18}", {"V100-NODE": 10**18}),
                   ("{'V100-NODE': nan}", {"V100-NODE": math.nan}), ("{'V100-NODE': 'a'}", {"V100-NODE": "a"}),
                   ("'abc'", "abc")),
    # a goodput table for 2 jobs
    "goodput": bads(("None", None), ("'abc'", "abc"), ("[]", []), ("zeros((3, 1))", np.zeros((3, 1))),
                     ("full nan", "nan-table"), ("full inf", "inf-table"), ("full -1", "neg-table"),
                     ("{}", {}), ("{'j0': None}", {"j0": None})),
    # a sequence of 2 jobs / nodes / layers (duplicates, wrong items)
    "items": bads(("None", None), ("'abc'", "abc"), ("[None]", [None]), ("[3]", [3]), ("duplicates", "dup"),
                   ("{}", {}), ("[]", [], False)),
    # a simulator's round length in seconds (issue 25: 1e-9 hung; 0 and a negative meant nothing)
    "round_seconds": _TYPES + _NONFINITE + bads(("-1", -1.0), ("0", 0.0), ("1e-9", 1e-9), ("1e300", 1e300),
                                                 ("2**64", 2**64), ("True", True), ("60", 60, False),
                                                 ("np.float64(30)", np.float64(30.0), False)),
    # the same, None allowed (the default)
    "round_seconds?": _TYPES[1:] + _NONFINITE + bads(("-1", -1.0), ("0", 0.0), ("1e-9", 1e-9), ("1e300", 1e300),
                                                      ("2**64", 2**64), ("True", True), ("None", None, False)),
    # a simulator's time cap in seconds (None: the default)
    "max_time": _TYPES[1:] + _NONFINITE + bads(("-1", -1.0), ("0", 0.0), ("1e300", 1e300), ("2**64", 2**64),
                                                ("True", True), ("600", 600, False), ("None", None, False)),
    # a sequence of seeds (a sweep's)
    "seeds": bads(("None", None), ("'abc'", "abc"), ("[]", []), ("[-1]", [-1]), ("[1.5]", [1.5]), ("[2**64]", [2**64]),
                   ("[nan]", [math.nan]), ("[None]", [None]), ("[0, 0]", [0, 0]), ("range(10**8)", range(10**8)),
                   ("'0-100000000'", "0-100000000"), ("[True]", [True]), ("(0, 1)", (0, 1), False),
                   ("'0-1'", "0-1", False)),
    # a workload's arrival time in seconds
    "arrival": _TYPES + _NONFINITE + bads(("-1", -1.0), ("1e300", 1e300), ("2**64", 2**64), ("True", True),
                                           ("0", 0, False), ("3600", 3600.0, False)),
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
    "choice?": ("'no-such-choice'", "[]", "None"),
    "names": ("'abc'", "[None]", "['no-such-name']", "['', '']"),
    "priority": ("None", "'no-such-choice'", "[]", "1001"),
    "free_names": ("'abc'", "[None]", "['', '']", "['a', 'a']"),
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
    "round_seconds": ("'abc'", "nan", "0", "1e-9", "1e300"),
    "round_seconds?": ("'abc'", "nan", "0", "1e-9", "None"),
    "max_time": ("'abc'", "nan", "inf", "-1", "1e300"),
    "seeds": ("'abc'", "[-1]", "[1.5]", "[2**64]", "range(10**8)", "'0-100000000'"),
    "arrival": ("None", "nan", "inf", "-1", "1e300"),
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


