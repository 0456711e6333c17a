"""Sia's placer with its few-jobs paths in Python (issue 42, item 4: a 64-GPU round holds a handful of jobs, where the
array checks cost more than the cells they check): :func:`_kept_slots_few` against :func:`_kept_slots_arrays` and
:meth:`_Grid.slots_by_job` read in Python against its arrays, value for value, on random rounds (valid previous
placements and broken ones), and :func:`place` with the Python paths against place with the arrays only."""

from __future__ import annotations

import random
from typing import Any

import pytest
from test_sia_placer_fastpaths import random_round

from schedopt.sia import Placement, place
from schedopt.sia import placement as placement_module
from schedopt.sia.placement import (
    Slot,
    _check_jobs,
    _config_of_slots,
    _Grid,
    _kept_slots_arrays,
    _kept_slots_few,
    _node_index,
)


def _normalized(previous: Any) -> dict[str, list[Slot]]:
    items = previous.assignments if isinstance(previous, Placement) else previous
    return {j: [(n, tuple(int(g) for g in gs)) for n, gs in slots] for j, slots in items.items()}


def _broken(prev: dict[str, list[Slot]], rng: random.Random, node_ids: list[str]) -> dict[str, list[Slot]]:
    """``prev`` with one kind of damage (or none): slots reversed or split, GPUs shuffled, an empty slot, a GPU out
    of range or negative, a GPU given twice, a node of another type or no node."""
    out = {j: list(s) for j, s in prev.items()}
    if not out:
        return out
    j = rng.choice(sorted(out))
    slots = out[j]
    kind = rng.randrange(11)
    n, gs = slots[0]
    if kind == 0 and len(slots) > 1:
        out[j] = slots[::-1]
    elif kind == 1 and len(gs) > 1:
        out[j] = [(n, gs[:len(gs) // 2]), (n, gs[len(gs) // 2:]), *slots[1:]]
    elif kind == 2 and len(gs) > 1:
        out[j] = [(n, tuple(reversed(gs))), *slots[1:]]
    elif kind == 3:
        out[j] = [(n, ()), *slots]
    elif kind == 4:
        out[j] = [(n, (*gs, rng.choice([-1, 99]))), *slots[1:]]
    elif kind == 5 and len(out) > 1:
        k = rng.choice([x for x in sorted(out) if x != j])
        out[k] = out[k] + [slots[0]]  # another job on the same GPUs
    elif kind == 6:
        out[j] = [(rng.choice(node_ids), gs), *slots[1:]]
    elif kind == 7:
        out[j] = [("nowhere-0", gs), *slots[1:]]
    elif kind == 8:
        out[j] = [(n, gs + gs), *slots[1:]]  # the job's own GPU twice
    elif kind == 9:
        out[j] = [(n, (*gs, 2**64)), *slots[1:]]  # beyond int64: the arrays' OverflowError
    return out


@pytest.mark.parametrize("seed", range(200))
def test_kept_slots_few_is_the_arrays(seed: int) -> None:
    rng = random.Random(seed)
    cluster, _, previous, _, _ = random_round(seed)
    prev = _broken(_normalized(previous), rng, [n for t in cluster.gpu_types for n in t.ids])
    # every previous job keeps its configuration (the case _kept_slots checks the GPUs of): the placement's own
    # configurations, or those of a plain mapping's slots
    if isinstance(previous, Placement):
        jobs = [(j, c) for j, c in previous.configs.items() if j in prev]
    else:
        jobs = [(j, c) for j, s in _normalized(previous).items() if (c := _config_of_slots(s, cluster)) is not None]
    nodes_of = _node_index(cluster)
    got = _kept_slots_few(cluster, jobs, prev, nodes_of)
    try:
        want = _kept_slots_arrays(cluster, jobs, prev, nodes_of)
    except OverflowError:  # a GPU beyond int64: None here, and place() raises it from _keep_all (tested below)
        want = None
    assert got == want
    assert got is None or list(got) == list(want)  # the same order of jobs


def test_kept_slots_cases_are_met() -> None:
    """The damaged rounds above reach both answers: kept slots (as they are and re-sorted) and None."""
    seen = {"none": 0, "kept": 0}
    for seed in range(100):
        rng = random.Random(seed)
        cluster, _, previous, _, _ = random_round(seed)
        if not isinstance(previous, Placement):
            continue
        prev = _broken(_normalized(previous), rng, [n for t in cluster.gpu_types for n in t.ids])
        jobs = [(j, c) for j, c in previous.configs.items() if j in prev]
        got = _kept_slots_few(cluster, jobs, prev, _node_index(cluster))
        seen["none" if got is None else "kept"] += 1
    assert seen["none"] > 10 and seen["kept"] > 10, seen


@pytest.mark.parametrize("seed", range(60))
def test_slots_by_job_python_is_the_arrays(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A grid filled by the placer (random rounds, GPUs scattered, smaller nodes): the same slots, same order."""
    rng = random.Random(seed)
    cluster, allocation, _, _, rigid = random_round(seed)
    grid = _Grid(cluster)
    for k, (_, c) in enumerate(_check_jobs(cluster, allocation, rigid)):
        grid.put(c, k if rng.random() < 0.8 else rng.randrange(k + 1))  # some slots on several types or nodes
    got = grid.slots_by_job()
    monkeypatch.setattr(placement_module, "_FEW_CELLS", -1)
    want = grid.slots_by_job()
    assert list(got.items()) == list(want.items())


@pytest.mark.parametrize("seed", range(60))
def test_place_with_and_without_the_python_paths(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, allocation, previous, pinned, rigid = random_round(seed)
    got = place(cluster, allocation, previous, pinned=pinned, rigid=rigid)
    monkeypatch.setattr(placement_module, "_FEW_CELLS", -1)
    monkeypatch.setattr(placement_module, "_FEW_JOBS", -1)
    want = place(cluster, allocation, previous, pinned=pinned, rigid=rigid)
    for field in ("assignments", "configs", "moved_from"):
        assert list(getattr(got, field).items()) == list(getattr(want, field).items())
    assert got.evicted == want.evicted and got.unplaced == want.unplaced


def _outcome(cluster: object, allocation: object, previous: object, pinned: object, rigid: object) -> object:
    try:
        got = place(cluster, allocation, previous, pinned=pinned, rigid=rigid)  # type: ignore[arg-type]
    except Exception as exc:  # the same error either way (an unknown node, a GPU beyond int64)
        return type(exc).__name__, str(exc)
    return ([list(getattr(got, f).items()) for f in ("assignments", "configs", "moved_from")], got.evicted,
            got.unplaced)


@pytest.mark.parametrize("seed", range(80))
def test_place_on_damaged_previous_with_and_without_the_python_paths(seed: int,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs that keep their configuration on damaged previous GPUs (_broken): the same placements, or the same
    error, with the Python paths (_kept_slots_few, _keep_all's few slots, slots_by_job in Python) and without."""
    rng = random.Random(seed)
    cluster, allocation, previous, pinned, rigid = random_round(seed)
    prev = _broken(_normalized(previous), rng, [n for t in cluster.gpu_types for n in t.ids])
    if isinstance(previous, Placement):
        prev_arg: object = Placement(assignments=prev, configs={j: c for j, c in previous.configs.items() if j in prev})
    else:
        prev_arg = prev
    got = _outcome(cluster, allocation, prev_arg, pinned, rigid)
    monkeypatch.setattr(placement_module, "_FEW_CELLS", -1)
    monkeypatch.setattr(placement_module, "_FEW_JOBS", -1)
    assert got == _outcome(cluster, allocation, prev_arg, pinned, rigid)


def test_aligned_blocks_hand_checked_and_kept_read_only() -> None:
    """The aligned blocks of a node, kept per (GPUs per node, size) for every grid: a 6-GPU node is the virtual
    nodes 4 + 2, so its 2-blocks start at 0 and 2 (in the 4) and 4 (the 2); its 4-block at 0; no 8-block."""
    from schedopt.sia.placement import _aligned_blocks

    def lists(R: int, s: int) -> list[list[int]]:
        return [a.tolist() for a in _aligned_blocks(R, s)]

    assert lists(6, 2) == [[0, 2, 4], [0, 0, 4], [4, 4, 2]]
    assert lists(6, 4) == [[0], [0], [4]]
    assert lists(6, 8) == [[], [], []]
    assert lists(7, 1) == [[0, 1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 4, 4, 6], [4, 4, 4, 4, 2, 2, 1]]
    assert lists(8, 4) == [[0, 4], [0, 0], [8, 8]]
    kept = _aligned_blocks(6, 2)
    assert _aligned_blocks(6, 2) is kept and not any(a.flags.writeable for a in kept)
    with pytest.raises(ValueError):
        kept[0][0] = 1  # shared by every grid: no caller may change them
