"""Independent checkers: plain Python / numpy over the placement, no model and no incremental bookkeeping.

Each ``check_*`` returns a list of :class:`~schedopt.problem.Violation` (a field path and a message; empty when all
is well); each ``assert_*`` raises :class:`~schedopt.problem.ViolationError` listing them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from ..problem import Violation, assert_valid
from .migration import Defragmentation
from .packing import Packing
from .profiles import Profiles, load_profiles
from .state import MIXED, ClusterState, GandivaJob

__all__ = [
    "assert_defragmentation",
    "assert_packing",
    "assert_state",
    "check_answer",
    "check_defragmentation",
    "check_packing",
    "check_state",
    "recompute",
]


V = Violation


def recompute(state: ClusterState) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Heights, affinities and per-GPU job counts from ``state.slots`` alone."""
    N = len(state.nodes)
    held = np.zeros(N)
    sizes: list[set[int]] = [set() for _ in range(N)]
    counts = [np.zeros(n.gpus, dtype=np.int64) for n in state.nodes]
    for jid, slots in state.slots.items():
        for n, g in slots:
            held[n] += 1
            counts[n][g] += 1
            sizes[n].add(state.jobs[jid].gpus)
    heights = held / np.array([n.gpus for n in state.nodes], dtype=float)
    aff = np.array([0 if not s else (next(iter(s)) if len(s) == 1 else MIXED) for s in sizes], dtype=np.int64)
    return heights, aff, counts


def check_state(state: ClusterState) -> list[Violation]:
    """Heights / affinities / loads equal their recomputation; slots valid; packed GPUs hold two 1-GPU jobs within
    memory; no job's memory exceeds its GPUs' (time-sliced jobs are resident one at a time)."""
    bad: list[Violation] = []
    heights, aff, counts = recompute(state)
    if not np.allclose(heights, state.heights()):
        bad.append(V("heights", f"{state.heights().tolist()} != recomputed {heights.tolist()}"))
    if not np.array_equal(aff, state.affinities()):
        bad.append(V("affinities", f"{state.affinities().tolist()} != recomputed {aff.tolist()}"))
    for n in range(len(state.nodes)):
        if not np.array_equal(counts[n], state.gpu_load(n)):
            bad.append(V(f"nodes[{n}].gpu_load", f"{state.gpu_load(n).tolist()} != recomputed {counts[n].tolist()}"))
    if set(state.jobs) != set(state.slots):
        bad.append(V("slots", "jobs and slots disagree"))
    for jid, slots in state.slots.items():
        job = state.jobs[jid]
        if len(slots) < job.gpus:
            bad.append(V(f"jobs[{jid}].slots", f"holds {len(slots)} GPUs < {job.gpus} requested"))
        if len(set(slots)) != len(slots):
            bad.append(V(f"jobs[{jid}].slots", "lists a GPU twice"))
        for n, g in slots:
            if job.memory > state.nodes[n].gpu_memory + 1e-9:
                bad.append(V(f"jobs[{jid}].memory", f"{job.memory} > GPU ({n},{g}) memory {state.nodes[n].gpu_memory}"))
    on: dict[tuple[int, int], list[str]] = defaultdict(list)
    for jid, slots in state.slots.items():
        for s in slots:
            on[s].append(jid)
    for s in state.packed:
        ids = on.get(s, [])
        if len(ids) != 2:
            bad.append(V(f"packed[{s}]", f"holds {len(ids)} jobs (slots: at most two, exactly two when packed)"))
            continue
        mem = sum(state.jobs[j].memory for j in ids)
        if mem > state.nodes[s[0]].gpu_memory + 1e-9:
            bad.append(V(f"packed[{s}].memory", f"{mem} > {state.nodes[s[0]].gpu_memory}"))
    return bad


def check_packing(
    state: ClusterState, jobs: Sequence[GandivaJob], packing: Packing, profiles: Profiles | None = None
) -> list[Violation]:
    """Every job on at most one idle GPU, at most two per GPU, memory within the GPU's, and the reported
    throughput equal to its recomputation from the factor table."""
    prof = profiles if profiles is not None else load_profiles()
    bad: list[Violation] = []
    by_id = {j.id: j for j in jobs}
    idle = {(n, g) for n in range(len(state.nodes)) for g in range(state.nodes[n].gpus) if not state.gpu_jobs(n, g)}
    on: dict[tuple[int, int], list[str]] = defaultdict(list)
    for jid, s in packing.assignment.items():
        if jid not in by_id:
            bad.append(V(f"assignment[{jid}]", "unknown job"))
            continue
        try:  # a slot out of the cluster or not a pair of integers (1.5 is no GPU index) is a violation (issue 25)
            slot = state.slot(s, f"assignment[{jid}]")
        except InputError as exc:
            bad.append(V(f"assignment[{jid}]", f"{s!r} {exc.message}"))
            continue
        if slot not in idle:
            bad.append(V(f"assignment[{jid}]", f"on GPU {slot}, which is not idle"))
        on[slot].append(jid)
    if set(packing.assignment) & set(packing.unplaced):
        bad.append(V("unplaced", "a job is both placed and unplaced"))
    if set(packing.assignment) | set(packing.unplaced) != set(by_id):
        bad.append(V("assignment", "placed + unplaced jobs differ from the input jobs"))
    total = 0.0
    for s, ids in on.items():
        cap = state.nodes[s[0]].gpu_memory
        mem = sum(by_id[j].memory for j in ids)
        if len(ids) > 2:
            bad.append(V(f"gpus[{s}]", f"holds {len(ids)} jobs"))
        if mem > cap + 1e-9:
            bad.append(V(f"gpus[{s}].memory", f"{mem} > {cap}"))
        if len(ids) == 1:
            total += 1.0
        elif len(ids) == 2:
            a, b = (prof.types.index(by_id[j].job_type) for j in ids)
            total += prof.factor[a, b] + prof.factor[b, a]
    if not np.isclose(total, packing.throughput, rtol=1e-9, atol=1e-9):
        bad.append(V("throughput", f"reported {packing.throughput} != recomputed {total}"))
    return bad


def check_defragmentation(before: ClusterState, job: GandivaJob, d: Defragmentation) -> list[Violation]:
    """The moves turn ``before`` into ``d.state``; only movable jobs moved, whole, onto idle GPUs; the count of
    moves equals the jobs whose node changed; ``freed`` is true exactly when ``job`` fits afterwards."""
    if d.state is None:
        return [V("state", "the answer holds no state")]
    bad = check_state(d.state)
    after = d.state
    if set(before.jobs) != set(after.jobs):
        bad.append(V("state.jobs", "the set of jobs changed"))
    moved = {j for j in before.jobs if sorted({n for n, _ in before.slots[j]}) != sorted({n for n, _ in after.slots[j]})}
    if len({m.job_id for m in d.moves}) != len(d.moves) and d.method == "exact":
        bad.append(V("moves", "exact defragmentation moved a job twice"))
    if not moved <= {m.job_id for m in d.moves}:
        bad.append(V("moves", f"jobs {sorted(moved - {m.job_id for m in d.moves})} changed node without a move"))
    for m in d.moves:
        j = m.job_id
        nodes_b = {n for n, _ in before.slots[j]}
        if len(nodes_b) != 1:
            bad.append(V(f"moves[{j}]", "the moved job spanned several nodes"))
        if any(len(before.gpu_jobs(n, g)) != 1 for n, g in before.slots[j]):
            bad.append(V(f"moves[{j}]", "the moved job was not alone on its GPUs"))
        if len(after.slots[j]) != len(before.slots[j]):
            bad.append(V(f"moves[{j}]", "the moved job changed its GPU count"))
    for j in before.jobs:
        if j not in moved and j not in {m.job_id for m in d.moves} and before.slots[j] != after.slots[j]:
            bad.append(V(f"state.slots[{j}]", "an unmoved job changed GPUs"))
    for n in range(len(after.nodes)):
        if (after.gpu_load(n) > np.maximum(before.gpu_load(n), 1)).any():
            bad.append(V(f"nodes[{n}]", "a GPU became oversubscribed"))
    free = np.sort(np.array([len(after.free_gpus(n)) for n in range(len(after.nodes))]))[::-1]
    gpus = np.sort(after.node_gpus)[::-1]
    m_need = int(np.searchsorted(np.cumsum(gpus), job.gpus) + 1)
    fit = free[:m_need].sum() >= job.gpus
    if bool(fit) != d.freed:
        bad.append(V("freed", f"{d.freed} but the job {'fits' if fit else 'does not fit'}"))
    return bad


def assert_state(state: ClusterState) -> None:
    """Raise :class:`~schedopt.problem.ViolationError` if :func:`check_state` finds a violation."""
    assert_valid(check_state(state), "gandiva cluster state")


def assert_packing(
    state: ClusterState, jobs: Sequence[GandivaJob], packing: Packing, profiles: Profiles | None = None
) -> None:
    """Raise :class:`~schedopt.problem.ViolationError` if :func:`check_packing` finds a violation."""
    assert_valid(check_packing(state, jobs, packing, profiles), "gandiva packing")


def assert_defragmentation(before: ClusterState, job: GandivaJob, d: Defragmentation) -> None:
    """Raise :class:`~schedopt.problem.ViolationError` if :func:`check_defragmentation` finds a violation."""
    assert_valid(check_defragmentation(before, job, d), "gandiva defragmentation")


def check_answer(instance: Any, answer: Any) -> list[Violation]:
    """The checker of a :class:`~schedopt.gandiva.GandivaInstance`'s answer, by operation: packing, migration, or
    the state an allocation leaves (an answer that holds no solution has nothing to check)."""
    if not answer.has_solution:
        return []
    st = instance.state()
    if isinstance(answer, Packing):
        return check_packing(st, instance.pending, answer, instance.table())
    if isinstance(answer, Defragmentation):
        return check_defragmentation(st, instance.pending[0], answer)
    state = getattr(answer, "state", None)
    if isinstance(state, ClusterState):
        return check_state(state)
    return [V("answer", f"{type(answer).__name__} is no Gandiva answer")]
