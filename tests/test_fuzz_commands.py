"""Issue 41: the fuzz of reproduce, the executor flags, the command line's silent choices, the engine's policy
boundary and the plug-ins (schedopt.testing.fuzz.commands), each case in its own process with a 5 s limit.

The default run tries one case per surface; the whole catalog is ``-m slow`` (and
``python -m schedopt.testing.fuzz.commands``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from schedopt.testing.fuzz.commands import COMMAND_CASES, CommandCase, run_command_case, run_command_cases

DEFAULT = ("reproduce: --sections ,", "executors: simulate --dask host:notaport", "simulate: --cluster ''",
           "engine: Decision(nodes=[...])")


def test_one_case_per_surface() -> None:
    chosen = [c for c in COMMAND_CASES if c.name in DEFAULT]
    assert len(chosen) == len(DEFAULT)
    outs = run_command_cases(5.0, cases=chosen)
    assert [o.status for o in outs] == ["named"] * 4, [o.repro() for o in outs]


def _raises(tmp: Path) -> str | None:
    raise ValueError("boom")


def _lies(tmp: Path) -> str | None:
    return "a wrong answer"


def _sleeps(tmp: Path) -> str | None:
    time.sleep(30)
    return None


def test_the_fuzzer_tells_raw_silent_and_hang_apart() -> None:
    assert run_command_case(CommandCase("t", "raw", call=_raises), 5.0).status == "raw"
    assert run_command_case(CommandCase("t", "silent", call=_lies), 5.0).status == "silent"
    t0 = time.monotonic()
    assert run_command_case(CommandCase("t", "hang", call=_sleeps), 0.5).status == "hang"
    assert time.monotonic() - t0 < 5
    # a bad input the command accepts (exit 0) is silent; a usage error is named
    ok = CommandCase("t", "accepted", ("generate", "sia", "--gpus", "64", "-o", "{tmp}/g.json"))
    assert run_command_case(ok, 5.0).status == "silent"
    assert run_command_case(CommandCase("t", "usage", ("generate",)), 5.0).status == "named"


@pytest.mark.slow
def test_every_case_is_named_or_works() -> None:
    outs = run_command_cases(5.0)
    bad = [o.repro() for o in outs if o.failed]
    assert not bad, "\n".join(bad)
    assert len(outs) == len(COMMAND_CASES) >= 90
