"""A user's policy module for tests/test_serve.py: Tiresias, slowed down by ``seconds`` in every round in which a
job whose id starts with ``slow`` is active (so a test can make a decision overrun its deadline when it wants)."""

from __future__ import annotations

import time
from typing import Any

from schedopt.sim import make_policy


class SlowTiresias:
    name = "slow-tiresias"
    adaptive = False

    def __init__(self, seconds: float = 1.5) -> None:
        self.seconds = float(seconds)
        self.inner = make_policy("tiresias")

    def decide(self, state: Any) -> Any:
        if any(j.id.startswith("slow") for j in state.jobs):
            time.sleep(self.seconds)
        return self.inner.decide(state)
