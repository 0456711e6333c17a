"""What every ``schedopt`` subcommand shares (the main command line and plug-ins such as ``schedopt.sim.cli``):
the exit-code rule, the ``--json`` document envelope, and argument types whose errors name the flag.

Exit codes, one rule for every command and problem:

====  ==============================================================================================================
0     success: the answer holds a solution (OPTIMAL, or FEASIBLE: a limit hit with an incumbent, or a heuristic's
      answer); commands without an answer (generate, backends, bench, bench report) did their job
1     no solution: INFEASIBLE, UNBOUNDED, a limit hit before any incumbent, a solver or numerical error
      (``explain`` on an infeasible instance included)
2     bad input or usage: the one-line message names the flag, or the field and the value
3     the requested backend is unknown, not installed, or cannot solve the model
4     internal error: a bug in schedopt (the traceback goes to stderr; please report it)
130   interrupted (Ctrl-C); ``bench`` keeps the runs that finished
====  ==============================================================================================================

``--json`` prints exactly one JSON object on stdout (strict JSON: no NaN or Infinity, numbers or null), also on
failure. Every document carries ``schema`` (``schedopt.cli.<command>`` or ``schedopt.cli.error``), ``version``,
``command`` and ``exit_code``; the JSON Schema of each is shipped in ``schedopt/schemas/cli/``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Mapping
from typing import Any

from .problem import Answer, to_jsonable
from .results import Limit, Termination, TerminationReason

__all__ = [
    "EXIT_BACKEND",
    "EXIT_CODES",
    "EXIT_INPUT",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_NO_SOLUTION",
    "EXIT_OK",
    "JSON_VERSION",
    "csv_ints",
    "csv_names",
    "document",
    "emit",
    "error_document",
    "exit_code_for",
    "format_timings",
    "nonneg_int",
    "parse_number",
    "positive_float",
    "positive_int",
    "seed_int",
    "unit_interval",
]

#: The exit codes of every command: 0 a solution held, 1 none, 2 bad input, 3 backend, 4 internal error, 130
#: interrupted.
EXIT_OK, EXIT_NO_SOLUTION, EXIT_INPUT, EXIT_BACKEND, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
#: Exit code -> what it means (the table of the command line's page).
EXIT_CODES: Mapping[int, str] = {
    EXIT_OK: "success: a solution is held (optimal, or feasible: a limit hit with an incumbent, or a heuristic's)",
    EXIT_NO_SOLUTION: "no solution: infeasible, unbounded, a limit hit before any incumbent, a solver error",
    EXIT_INPUT: "bad input or usage (the message names the flag, or the field and the value)",
    EXIT_BACKEND: "the requested backend is unknown, not installed, or cannot solve the model",
    EXIT_INTERNAL: "internal error (a bug: please report it with the traceback printed on stderr)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C); solve prints what it holds (an incumbent, if any), bench keeps the runs "
                      "that finished",
}
#: The version of the ``--json`` documents (``schedopt/schemas/cli.schema.json``).
JSON_VERSION = 1

_SOLVED = (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE)


def exit_code_for(outcome: Answer | Termination) -> int:
    """130 when Ctrl-C ended the solve (Limit.INTERRUPTED, with or without an incumbent: the shell's convention for
    SIGINT); else 0 when the answer (or termination) holds a solution, 1 otherwise."""
    term = outcome.termination if isinstance(outcome, Answer) else outcome
    if term is not None and term.limit is Limit.INTERRUPTED:
        return EXIT_INTERRUPTED
    if isinstance(outcome, Answer):
        return EXIT_OK if outcome.has_solution else EXIT_NO_SOLUTION
    return EXIT_OK if outcome.reason in _SOLVED else EXIT_NO_SOLUTION


def document(command: str, exit_code: int, **fields: Any) -> dict[str, Any]:
    """The ``--json`` document of ``command``: the envelope plus ``fields`` made JSON-ready."""
    return {"schema": f"schedopt.cli.{command.replace(' ', '_')}", "version": JSON_VERSION, "command": command,
            "exit_code": int(exit_code), **{k: to_jsonable(v) for k, v in fields.items()}}


def error_document(command: str, exit_code: int, exc: BaseException | None, message: str) -> dict[str, Any]:
    """The ``--json`` document of a failure: the error's type, the field and value it names (or null), a message."""
    return {"schema": "schedopt.cli.error", "version": JSON_VERSION, "command": command, "exit_code": int(exit_code),
            "error": {"type": type(exc).__name__ if exc is not None else "UsageError",
                      "field": getattr(exc, "field", None), "value": to_jsonable(getattr(exc, "value", None)),
                      "message": message}}


def emit(doc: Mapping[str, Any]) -> None:
    """Print ``doc`` as strict JSON (``allow_nan=False``: a non-finite number is a bug, never printed)."""
    sys.stdout.write(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    sys.stdout.flush()


# ------------------------------------------------------------------------------------------------ argument types
def parse_number(text: str, cast: type, ok: Callable[[float], bool], what: str) -> Any:
    """``cast(text)`` when it parses and ``ok`` holds; otherwise one argparse message naming what was expected."""
    try:
        v = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if not ok(v):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return v


def positive_int(text: str) -> int:
    """An ``argparse`` type: an integer >= 1."""
    return parse_number(text, int, lambda v: v >= 1, "a positive integer")


def nonneg_int(text: str) -> int:
    """An ``argparse`` type: an integer >= 0."""
    return parse_number(text, int, lambda v: v >= 0, "an integer >= 0")


def positive_float(text: str) -> float:
    """An ``argparse`` type: a positive finite number."""
    return parse_number(text, float, lambda v: 0 < v < float("inf"), "a positive finite number")


def seed_int(text: str) -> int:
    """A seed: an integer with 0 <= seed < 2**32 (what numpy's generators and ``schedopt.sim.limits`` accept)."""
    return parse_number(text, int, lambda v: 0 <= v < 2**32, "an integer seed with 0 <= seed < 2**32")


def unit_interval(text: str) -> float:
    """An ``argparse`` type: a number in [0, 1]."""
    return parse_number(text, float, lambda v: 0.0 <= v <= 1.0, "a number in [0, 1]")


def csv_ints(text: str) -> list[int]:
    """``64,512,2048`` -> [64, 512, 2048]; every item an integer >= 0."""
    out = []
    for item in text.split(","):
        item = item.strip()
        try:
            v = int(item)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be comma-separated integers, got {item!r} in {text!r}") from None
        if v < 0:
            raise argparse.ArgumentTypeError(f"must be comma-separated integers >= 0, got {item!r}")
        out.append(v)
    return out


def csv_names(text: str) -> list[str]:
    """``highs,cpsat`` -> ``['highs', 'cpsat']``; an empty item is an ``argparse`` error."""
    names = [s.strip() for s in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"must be comma-separated names without empty items, got {text!r}")
    return names


#: how the text output names each timing phase
_PHASE_NAMES = {"build": "build", "handoff": "hand-off", "solve": "solve", "decode": "decode"}


def format_timings(timings: Mapping[str, float | None]) -> str:
    """The phases of a solve on one line in one unit, written: ``build 2.9 ms, hand-off 0.0 ms, solve 384.6 ms``
    (milliseconds; the ``--json`` output keeps seconds, as its schema says). Phases without a value are left out."""
    parts = [f"{_PHASE_NAMES.get(k, k)} {v * 1e3:.1f} ms" for k, v in timings.items()
             if v is not None and math.isfinite(v)]
    return ", ".join(parts) or "-"


def add_executor_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """The ``--executor SPEC`` / ``--dask [HOST:PORT]`` / ``--ray`` flags of a command that runs ``what`` (e.g.
    "runs", "simulations") at once; read them with :func:`schedopt.executors.spec_from_flags`."""
    parser.add_argument("--executor", default=None, metavar="SPEC",
                        help=f"where the {what} go: threads[:N], processes[:N], dask[:N] (a local Dask "
                             "cluster), dask://HOST:PORT, ray[:N], ray://HOST:PORT")
    parser.add_argument("--dask", nargs="?", const="local", default=None, metavar="HOST:PORT",
                        help="run on a Dask scheduler (no address: a local cluster)")
    parser.add_argument("--ray", action="store_true", help="run on a local Ray pool")
