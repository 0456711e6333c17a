"""Entry points, cases and outcomes; calling one entry point with one bad value under a time limit."""

from __future__ import annotations

import contextlib
import functools
import gc
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ...errors import SchedoptError
from .catalog import CATALOG, MISSING, Bad, bad_values, core

FAILING = ("raw", "hang", "silent")


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


class CliExit(SchedoptError):
    """The command line answered with a message and a non-zero exit status (a usage error or a named error).
    (Here, beside the runner both entry modules import, so that the simulator's entries need not import the
    solver side's: tests/test_import_graph.py.)"""


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
    return st.one_of(*[bad_values(entry.fields[f], generated=generated).map(functools.partial(Case, f)) for f in names])


def all_cases(entry: EntryPoint, field_name: str | None = None, *, only_core: bool = False) -> list[Case]:
    """Every catalog case of ``entry`` (or of one field), or only the default run's core values."""
    names = [field_name] if field_name else list(entry.fields)
    return [Case(f, b) for f in names for b in (core if only_core else CATALOG.__getitem__)(entry.fields[f])]


