"""The shared progress display (schedopt.bench.progress) as the simulator's sweep uses it, off a terminal."""

from __future__ import annotations

import pytest

from schedopt.sim.sweep import simulate_many


def test_simulate_many_progress_auto_on_and_off(small_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    # auto, stderr captured (no terminal): no bar, one plain closing line (the 30 s interval has not passed)
    simulate_many(["fifo", "tiresias"], [small_csv], cluster="pollux", workers=1)
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("progress: 2/2 (100%) elapsed ") and lines[0].endswith(" finished")
    # forced on: the bar, even off a terminal, ending its line once
    simulate_many(["fifo", "tiresias"], [small_csv], cluster="pollux", workers=1, progress=True)
    err = capsys.readouterr().err
    assert err.count("\r\x1b[2K[") == 2 and "2/2 elapsed" in err and err.endswith("\n")
    # off: nothing
    simulate_many(["fifo"], [small_csv], cluster="pollux", workers=1, progress=False)
    assert capsys.readouterr().err == ""
