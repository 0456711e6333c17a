"""What a simulation's seed varies (issue 41), and the sweeps whose seeds cannot change anything.

A :class:`~schedopt.sim.task.SimTask`'s ``seed`` reaches two places, and only these:

* **the policy**, when its factory takes a ``seed`` (``make_policy(spec, seed=...)``): Pollux's genetic search
  (``pollux``, ``pollux-unaware``) draws with it; ``sia``, ``fifo``, ``tiresias`` and ``optimus`` take one and draw
  nothing (their class says ``seeded = False``); a policy *object* is copied, never re-seeded;
* **a generated workload**: ``gandiva/synthetic``, ``hived/synthetic`` and ``synergy/philly`` are drawn with it.

Shipped workloads (``saturn/1``, ``philly/3``, ...), CSV files and named derived workloads (``...+gpt=0.1:seed=2``:
the seed is in the name) are fixed: on them, the seeds of a policy that draws nothing give identical runs.
:func:`seed_effect` says what a seed varies for one (policy, workload); :func:`inert_seeds` names the groups of a
sweep whose seeds cannot change anything (``simulate_many`` warns with :class:`SeedWarning`, ``schedopt simulate``
logs it), and the report's figures collapse identical runs into one line with a note.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import InputError

__all__ = ["SeedWarning", "inert_seeds", "seed_effect", "seed_list_text"]


class SeedWarning(UserWarning):
    """A sweep's seeds cannot change anything for some (policy, workload): its runs will be identical."""


def seed_effect(policy: Any, workload: str) -> str | None:
    """What the seed of a simulation of ``policy`` (a spec or a policy object) on ``workload`` varies, in words;
    None when it varies nothing (the runs of every seed are identical). A policy or family this module cannot
    inspect (an unknown name: its run will say why) is taken to vary with the seed."""
    from .families import system_for

    try:
        fam = system_for(policy)
    except InputError:
        return "unknown (the policy does not resolve)"
    w = str(workload)
    if fam.name in ("gandiva", "hived"):
        return f"the synthetic trace {w} draws (arrivals, sizes, durations)"
    if fam.name == "synergy":
        return f"the generated trace {w} draws" if w.startswith("synergy/philly") else None
    if fam.name != "elastic":
        return f"whatever the {fam.name} family does with it (a plug-in family)"
    if not isinstance(policy, str):  # an object is copied per simulation, never given the seed
        return None
    from .registry import parse_spec, policy_entry

    try:
        entry = policy_entry(policy)
        takes = entry.takes("seed")
        seeded = getattr(entry.load(), "seeded", None) if takes else False
    except InputError:
        return "unknown (the policy does not resolve)"
    if not takes or seeded is False:
        return None
    name = parse_spec(policy).name
    return f"{name}'s random draws" if seeded else f"whatever {name} does with its seed (it takes one)"


def seed_list_text(seeds: Sequence[int]) -> str:
    """``0-3`` for a run of consecutive seeds, else ``0, 2, 5``."""
    s = sorted(set(int(x) for x in seeds))
    if len(s) > 2 and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}-{s[-1]}"
    return ", ".join(map(str, s))


def inert_seeds(tasks: Iterable[Any]) -> list[str]:
    """One sentence per group of ``tasks`` (same policy, workload and other settings, two or more seeds) whose seeds
    cannot change anything; empty when every seed of the sweep can matter."""
    import json

    from .records import task_key

    groups: dict[str, tuple[Any, list[int]]] = {}
    for t in tasks:
        key = json.dumps({k: v for k, v in task_key(t).items() if k != "seed"}, sort_keys=True, default=str)
        groups.setdefault(key, (t, []))[1].append(int(getattr(t, "seed", 0)))
    out: list[str] = []
    for t, seeds in groups.values():
        if len(set(seeds)) < 2:
            continue
        pol, wl = getattr(t, "policy", None), str(getattr(t, "workload", ""))
        if seed_effect(pol, wl) is not None:
            continue
        pname = pol if isinstance(pol, str) else str(getattr(pol, "name", type(pol).__name__))
        out.append(f"seeds {seed_list_text(seeds)} of {pname} on {wl} cannot change anything: the workload is fixed "
                   f"(a shipped workload or a file) and {pname} draws no random numbers, so the {len(set(seeds))} "
                   "runs will be identical (see what a seed varies: docs/reference/seeds.md)")
    return out
