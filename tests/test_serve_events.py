"""The service's one-pass reading of progress events (schedopt.serve.events.fast_progress) against the general route
(schedopt.live.event_from_dict): whatever the fast route accepts, the general route accepts as the same event (the
same field values and types); whatever the general route refuses, the fast route leaves to it (returns None), so
every error still names its field the general route's way."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from schedopt.errors import InputError
from schedopt.live import event_from_dict
from schedopt.serve.adapter import LiveSession
from schedopt.serve.events import fast_progress

BASE: dict[str, Any] = {"type": "JobProgress", "time": 60.0, "job_id": "cifar10-0-0", "progress": 0.25, "epoch": 3,
                        "local_batch": 128, "accumulation": 0, "attained_gpu_seconds": 120.0, "grad_sqr": 0.5,
                        "grad_var": 2.0,
                        "measurements": [{"gpu_type": "t4", "nodes": 1, "gpus": 2, "local_batch": 128,
                                          "step_time": 0.25, "sync_time": 0.05}]}

#: values to try in every field: each type JSON has, the edges of every range, non-finite numbers
VALUES: list[Any] = [None, True, False, 0, 1, -1, 0.0, 0.5, 0.999999, 1.0, 1.5, -0.0, -1e-300, 2**20, 2**20 + 1,
                     2**31, 2**31 + 1, 2**1100, 1e308, float("nan"), float("inf"), float("-inf"), "", "a", "t4",
                     "a b", "a@b", "x" * 253, "x" * 254, [], [1], {}, 3.0]


def _slow(d: Any) -> Any:
    try:
        return event_from_dict(d, "events[0]")
    except (InputError, OverflowError) as exc:
        return exc


def _agree(d: Any) -> bool:
    """The fast route returns None or the general route's event; True when it accepted ``d``."""
    fast = fast_progress(d)
    if fast is None:
        return False
    slow = _slow(d)
    assert not isinstance(slow, Exception), (d, slow)
    assert fast == slow and repr(fast) == repr(slow), d
    assert all(type(getattr(fast, k)) is type(getattr(slow, k)) for k in ("time", "progress", "epoch",
                                                                          "attained_gpu_seconds", "grad_sqr"))
    assert [tuple(map(type, vars(m).values())) for m in fast.measurements] == \
        [tuple(map(type, vars(m).values())) for m in slow.measurements]
    return True


def test_every_field_at_every_value_agrees_with_the_general_route() -> None:
    accepted = refused = 0
    for key in [k for k in BASE if k != "type"]:
        for v in VALUES:
            d = {**BASE, key: v}
            if _agree(d):
                accepted += 1
            else:
                refused += 1
        d = {k: x for k, x in BASE.items() if k != key}
        accepted += _agree(d)
    for key in BASE["measurements"][0]:
        for v in VALUES:
            m = {**BASE["measurements"][0], key: v}
            accepted += _agree({**BASE, "measurements": [m]})
        m = {k: x for k, x in BASE["measurements"][0].items() if k != key}
        accepted += _agree({**BASE, "measurements": [m]})
    # the plain document, an unknown key, another event type, a non-object
    assert _agree(BASE)
    for d in ({**BASE, "extra": 1}, {**BASE, "type": "JobFinished"}, [BASE], "JobProgress",
              {**BASE, "measurements": [{**BASE["measurements"][0], "extra": 1}]}):
        assert fast_progress(d) is None
    assert accepted > 100 and refused > 100  # both routes exercised (hand count: most values are refused somewhere)


def test_random_combinations_agree() -> None:
    rng = random.Random(38)
    keys = [k for k in BASE if k != "type"]
    mkeys = list(BASE["measurements"][0])
    accepted = 0
    for _ in range(3000):
        d = dict(BASE)
        for k in rng.sample(keys, rng.randint(1, 3)):
            d[k] = rng.choice(VALUES)
        if rng.random() < 0.5:
            m = dict(BASE["measurements"][0])
            for k in rng.sample(mkeys, rng.randint(1, 2)):
                m[k] = rng.choice(VALUES)
            d["measurements"] = [BASE["measurements"][0], m]
        accepted += _agree(d)
    assert accepted > 50


def test_a_refused_event_of_a_batch_names_its_field_as_before() -> None:
    from schedopt.live import Session
    from schedopt.sim import cluster_preset

    port = LiveSession(Session(cluster_preset("sia-64"), "sia"))
    docs = [dict(BASE, job_id=f"j{k}") for k in range(3)]
    docs[2] = {**BASE, "measurements": [{**BASE["measurements"][0], "sync_time": 0.25}]}
    with pytest.raises(InputError) as exc:
        port.parse_events(docs, "events")
    assert exc.value.field == "events[2].measurements[0].sync_time" and exc.value.value == 0.25
    assert [e.job_id for e in port.parse_events(docs[:2], "events")] == ["j0", "j1"]
    for pair in itertools.product([None, 1], repeat=2):  # local_batch / accumulation come together
        d = {**BASE, "local_batch": pair[0], "accumulation": pair[1]}
        assert _agree(d) == (pair[0] == pair[1]) == (not isinstance(_slow(d), InputError))
