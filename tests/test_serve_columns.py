"""Progress reports in columns (schedopt.serve.columns, a ``JobProgressBatch`` document) against the general route
(schedopt.live.event_from_dict, row by row): every column at every value of tests/test_serve_events.py's list, in
one row of three, gives the general route's events (the same values and types), or its error with the row in the
field's name (``events[0].epoch[1]``) and the same value and message; the client's documents read back as the
events they came from; a refusal when the events are applied names the document and the row."""

from __future__ import annotations

import itertools
import math
from typing import Any

import jsonschema
import pytest
from test_serve_events import BASE, VALUES

from schedopt.errors import InputError
from schedopt.live import JobProgress, Measurement, Session, event_from_dict
from schedopt.live.client import event_documents
from schedopt.schemas import load
from schedopt.serve.adapter import LiveSession
from schedopt.serve.columns import PROGRESS_BATCH, TOO_LARGE, ProgressColumns, progress_batch, row_field
from schedopt.sim import cluster_preset

KEYS = [k for k in BASE if k != "type"]
ROWS = [{**BASE, "job_id": "a-0"}, {**BASE, "job_id": "b-1", "time": 61, "epoch": None, "progress": 0},
        {**BASE, "job_id": "c-2", "local_batch": None, "accumulation": None, "grad_sqr": None, "grad_var": None,
         "measurements": []}]


def _columns(rows: list[dict[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {"type": PROGRESS_BATCH}
    for k in KEYS:
        if any(k in r for r in rows):
            doc[k] = [r.get(k) for r in rows]
    return doc


def _general(rows: list[dict[str, Any]]) -> list[Any] | InputError:
    out = []
    for r, row in enumerate(rows):
        try:
            out.append(event_from_dict({k: v for k, v in row.items() if v is not None}, "events[0]"))
        except OverflowError:
            return InputError(f"events[0][{r}]", {k: v for k, v in row.items() if v is not None}, TOO_LARGE)
        except InputError as exc:
            return InputError(row_field("events[0]", r, exc.field.removeprefix("events[0]").lstrip(".")), exc.value,
                              exc.message)
    return out


def _agree(rows: list[dict[str, Any]]) -> bool:
    """The columns give the general route's events or its error; True when accepted."""
    want = _general(rows)
    try:
        got: Any = progress_batch(_columns(rows), "events[0]")
    except InputError as exc:
        assert isinstance(want, InputError), (rows, exc)
        same_value = want.message == TOO_LARGE or repr(exc.value) == repr(want.value)  # (the row: keys in order)
        assert (exc.field, exc.message) == (want.field, want.message) and same_value, rows
        return False
    assert not isinstance(want, InputError), (rows, want)
    assert got == want and repr(got) == repr(want), rows
    for a, b in zip(got, want):
        assert [type(v) for v in vars(a).values()] == [type(v) for v in vars(b).values()], rows
    return True


def test_every_column_at_every_value_agrees_with_the_general_route() -> None:
    accepted = refused = 0
    for key, v in itertools.product(KEYS, VALUES):
        rows = [dict(r) for r in ROWS]
        rows[1][key] = v
        if _agree(rows):
            accepted += 1
        else:
            refused += 1
    for key, v in itertools.product(BASE["measurements"][0], VALUES):
        rows = [dict(r) for r in ROWS]
        rows[1]["measurements"] = [BASE["measurements"][0], {**BASE["measurements"][0], key: v}]
        accepted += _agree(rows)
    assert _agree(ROWS) and _agree(ROWS[:1])
    assert progress_batch({"type": PROGRESS_BATCH, "time": 1.0, "job_id": []}, "events[0]") == []
    assert accepted > 100 and refused > 100  # both outcomes exercised (most values are refused somewhere)


@pytest.mark.parametrize(("doc", "field", "value"), [
    ({"type": PROGRESS_BATCH, "time": 1.0}, "events[0].job_id", None),
    ({"type": PROGRESS_BATCH, "job_id": ["a"]}, "events[0].time", None),
    ({"type": PROGRESS_BATCH, "time": 1.0, "job_id": "a"}, "events[0].job_id", "a"),
    ({"type": PROGRESS_BATCH, "time": 1.0, "job_id": ["a", "b"], "epoch": [1]}, "events[0].epoch", 1),
    ({"type": PROGRESS_BATCH, "time": [1.0], "job_id": ["a", "b"]}, "events[0].time", 1),
    ({"type": PROGRESS_BATCH, "time": 1.0, "job_id": ["a"], "epochs": [1]}, "events[0].epochs", [1]),
    ({"type": PROGRESS_BATCH, "time": 1.0, "job_id": ["a", "b c"]}, "events[0].job_id[1]", "b c"),
    ({"type": PROGRESS_BATCH, "time": -1, "job_id": ["a", "b"]}, "events[0].time[0]", -1),
])
def test_the_shape_of_a_columnar_document_is_checked(doc: dict[str, Any], field: str, value: Any) -> None:
    with pytest.raises(InputError) as ei:
        progress_batch(doc, "events[0]")
    assert (ei.value.field, ei.value.value) == (field, value)


def _progress(k: int, **kw: Any) -> JobProgress:
    return JobProgress(60.0, f"j{k}", 0.01 * k, k, **kw)


def test_the_clients_documents_read_back_as_its_events() -> None:
    m = Measurement("t4", 1, 2, 128, 0.25, 0.05)
    events = [_progress(0), _progress(1, measurements=(m,)), event_from_dict(
        {"type": "JobFinished", "time": 60.0, "job_id": "x"}), _progress(2), _progress(3, grad_sqr=0.5, grad_var=2.0),
        _progress(4, local_batch=64, accumulation=1), JobProgress(61.0, "j5", attained_gpu_seconds=3.0)]
    docs = event_documents(events)
    assert [d["type"] for d in docs] == [PROGRESS_BATCH, "JobFinished", PROGRESS_BATCH]
    assert docs[0]["time"] == 60.0 and docs[2]["time"] == [60.0, 60.0, 60.0, 61.0]  # one time when all share it
    assert "grad_sqr" not in docs[0] and docs[0]["measurements"] == {"row": [1], **{k: [v] for k, v in
                                                                                   m.to_dict().items()}}
    schema = load("service")
    for d in (docs[0], docs[2]):
        jsonschema.validate(d, {**schema, "$ref": "#/$defs/progress_batch"})
    items = LiveSession(Session(cluster_preset("sia-64"), "tiresias")).parse_events(docs, "events")
    assert [type(p) for p in items] == [ProgressColumns, type(events[2]), ProgressColumns]  # no event a row
    parsed = [e for p in items for e in (p.events() if isinstance(p, ProgressColumns) else [p])]
    assert parsed == events and repr(parsed) == repr(events)
    assert [d["type"] for d in event_documents(events[:1])] == ["JobProgress"]  # a run of one: as it is


def test_a_refusal_when_applied_names_the_document_and_the_row() -> None:
    live = LiveSession(Session(cluster_preset("sia-64"), "tiresias"))
    submitted = [event_from_dict({"type": "JobSubmitted", "time": 0.0, "job": {
        "id": f"j{k}", "application": "cifar10", "submitted": 0.0, "requested_gpus": 1}}) for k in range(4)]
    live.apply(submitted[:3])
    docs = [event_documents(submitted[3:])[0], *event_documents([_progress(0), _progress(1), _progress(7)])]
    with pytest.raises(InputError) as ei:
        live.apply(live.parse_events(docs, "events"))
    assert (ei.value.field, ei.value.value) == ("events[1].job_id[2]", "j7")


def _running(policy: str = "sia") -> Session:
    s = Session(cluster_preset("sia-64"), policy)
    for k in range(6):
        s.apply(event_from_dict({"type": "JobSubmitted", "time": 0.0, "job": {
            "id": f"j{k}", "application": "cifar10" if k % 2 else "imagenet", "submitted": 0.0,
            "requested_gpus": 1 + k % 3}}))
    s.decide(0.0)
    return s


def _reports() -> list[JobProgress]:
    ms = [Measurement("t4", 1, 2, 128, 0.25, 0.05), Measurement("a100", 1, 1, 64, 0.1, 0.0),
          Measurement("rtx2080ti", 1, 4, 128, 0.2, 0.04)]
    return [JobProgress(60.0, "j0", 0.1, 1, (ms[0],)), JobProgress(60.0, "j1", 0.2, 0, grad_sqr=0.5, grad_var=2.0),
            JobProgress(60.0, "j2", attained_gpu_seconds=30.0, local_batch=32, accumulation=1),
            JobProgress(61.0, "j3", 0.3, 2, (ms[1], ms[2])), JobProgress(62.0, "j0", 0.15, 2, (ms[1],)),
            JobProgress(62.0, "j5")]


def _doc(s: Session) -> dict[str, Any]:
    """The session's document less the times of its last decision (measurements, not state) and the pickled
    policy objects (whose pickle holds timings too; events do not reach them: the next decisions are compared)."""
    d = {k: v for k, v in s.to_document().items() if k not in ("roles", "roles_sha256")}
    if d.get("plan"):
        d["plan"] = {k: v for k, v in d["plan"].items() if k not in ("policy_cpu_seconds", "policy_seconds")}
    return d


def _plan(s: Session) -> Any:
    d = s.decide(120.0).to_dict()
    return {k: v for k, v in d.items() if k not in ("policy_cpu_seconds", "policy_seconds")}


@pytest.mark.parametrize("checked", ["pairs", "objects", False])
def test_columns_applied_at_once_equal_the_events_one_by_one(checked: str | bool) -> None:
    one, cols = _running(), _running()
    assert _doc(one) == _doc(cols)
    reports = _reports()
    for e in reports:
        one.apply(e)
    if checked:  # the service's route: the document checked in columns, applied with no event a row (the
        # measurements as the (key, (step, sync)) pairs the columns give, or as Measurement objects made from them)
        c = progress_batch.__globals__["progress_columns"](event_documents(reports)[0], "events[0]")
        assert isinstance(c, ProgressColumns) and len(c) == len(reports)
        ms = {"measured": c.measured} if checked == "pairs" else {"measurements": c.measurements}
        cols.apply_progress(c.time, c.job_id, progress=c.progress, epoch=c.epoch, **ms,
                            local_batch=c.local_batch, accumulation=c.accumulation,
                            attained_gpu_seconds=c.attained_gpu_seconds, grad_sqr=c.grad_sqr, grad_var=c.grad_var,
                            checked=True)
    else:
        def col(k: str) -> list[Any]:
            return [getattr(e, k) for e in reports]
        cols.apply_progress(col("time"), col("job_id"), progress=col("progress"), epoch=col("epoch"),
                            measurements=col("measurements"), local_batch=col("local_batch"),
                            accumulation=col("accumulation"), attained_gpu_seconds=col("attained_gpu_seconds"),
                            grad_sqr=col("grad_sqr"), grad_var=col("grad_var"))
    assert _doc(cols) == _doc(one)
    j0 = cols.jobs.get("j0") or next(p for p in cols.pending if p.id == "j0")
    assert (j0.frac, j0.epoch, len(j0.measured)) == (0.15, 2, 2)  # the later row of j0 applied last
    assert _plan(cols) == _plan(one)
    assert _doc(cols) == _doc(one)


def test_columns_are_all_or_none_and_name_the_column_and_row() -> None:
    s = _running("tiresias")
    before = s.to_document()
    with pytest.raises(InputError) as ei:
        s.apply_progress(70.0, ["j0", "j1", "nope"], progress=[0.1, 0.2, 0.3])
    assert (ei.value.field, ei.value.value) == ("job_id[2]", "nope")
    with pytest.raises(InputError) as ei:
        s.apply_progress(70.0, ["j0", "j1"], progress=[0.1, 1.5])
    assert (ei.value.field, ei.value.value) == ("progress[1]", 1.5)
    with pytest.raises(InputError) as ei:
        s.apply_progress([70.0, -1.0], ["j0", "j1"])
    assert (ei.value.field, ei.value.value) == ("time[1]", -1.0)
    with pytest.raises(InputError) as ei:
        s.apply_progress(70.0, ["j0", "j1"], measurements=[[], [Measurement("h100", 1, 1, 64, 0.1, 0.0)]])
    assert (ei.value.field, ei.value.value) == ("measurements[1][0].gpu_type", "h100")
    with pytest.raises(InputError) as ei:  # the same in the pairs of rows already checked
        s.apply_progress(70.0, ["j0", "j1"], measured=[[], [(("h100", 1, 1, 64), (0.1, 0.0))]], checked=True)
    assert (ei.value.field, ei.value.value) == ("measurements[1][0].gpu_type", "h100")
    with pytest.raises(InputError) as ei:  # pairs only for rows already checked
        s.apply_progress(70.0, ["j0", "j1"], measured=[[], []])
    assert ei.value.field == "measured"
    with pytest.raises(InputError) as ei:
        s.apply_progress(70.0, ["j0", "j1"], epoch=[1])
    assert ei.value.field == "epoch"
    assert s.to_document() == before  # nothing changed by a refused batch
    live = LiveSession(s)
    doc = {"type": PROGRESS_BATCH, "time": 70.0, "job_id": ["j0", "j9"], "progress": [0.1, 0.2]}
    with pytest.raises(InputError) as ei:
        live.apply(live.parse_events([doc], "events"))
    assert (ei.value.field, ei.value.value, getattr(ei.value, "applied", None)) == ("events[0].job_id[1]", "j9", 0)
    assert s.to_document() == before


def test_the_measurements_column_checked_at_once_agrees_with_one_by_one() -> None:
    from schedopt.serve.columns import _measurements_at_once, measurement_of_pair
    from schedopt.serve.events import measurement_of
    base = BASE["measurements"][0]
    cases = [{**base, k: v} for k in base for v in VALUES] + [{k: x for k, x in base.items() if k != key}
                                                             for key in base] + [{**base, "extra": 1}, [], "x"]
    took = 0
    for m in cases:
        col = [[base, m], None, [], [base]]
        one = [measurement_of(x) for x in (base, m, base)]
        at_once = _measurements_at_once(col)
        if at_once is None:
            continue
        took += 1
        assert None not in one, m  # nothing accepted at once that one by one refuses
        assert [len(r) for r in at_once] == [2, 0, 0, 1]
        assert all(type(p) is tuple for r in at_once for p in r)  # (key, (step, sync)) pairs, no object made
        got = [measurement_of_pair(p) for p in (*at_once[0], *at_once[3])]
        assert got == one and [tuple(map(type, vars(x).values())) for x in got] == [
            tuple(map(type, vars(x).values())) for x in one], m
    want = sum(1 for m in cases if type(m) is dict and measurement_of(m) is not None)
    assert took == want > 10  # and everything one by one accepts is accepted at once


def _in_columns(col: list[Any]) -> dict[str, Any]:
    """A measurements column of the list form (one list a row) in the columns form: the row of each measurement,
    then its fields (every measurement with the same keys)."""
    flat = [(r, m) for r, ms in enumerate(col) for m in ms or ()]
    keys = list(flat[0][1]) if flat else ["gpu_type", "nodes", "gpus", "local_batch", "step_time"]
    return {"row": [r for r, _ in flat], **{k: [m[k] for _, m in flat] for k in keys}}


def _outcome(doc: dict[str, Any]) -> Any:
    try:
        got = progress_batch(doc, "events[0]")
    except InputError as exc:
        return exc.field, repr(exc.value), exc.message
    return [(e, tuple(map(type, vars(e).values()))) for e in got]


def test_the_measurements_in_columns_read_as_the_list_form() -> None:
    """Measurements in columns (``{"row": [...], "gpu_type": [...], ...}``, what the client sends) give the events
    of the same measurements one list a row, or the same refusal (naming the row and the measurement), at every
    value of every field; a malformed object of columns is refused naming the column."""
    base = BASE["measurements"][0]
    ids = ["a-0", "b-1", "c-2", "d-3"]
    took = 0
    for k, v in [(k, v) for k in base for v in VALUES] + [(None, None)]:
        m = base if k is None else {**base, k: v}
        col = [[base, m], None, [], [base]]
        listed = {"type": PROGRESS_BATCH, "time": 60.0, "job_id": ids, "measurements": col}
        columns = {**listed, "measurements": _in_columns(col)}
        want = _outcome(listed)
        assert _outcome(columns) == want, (k, v)
        took += isinstance(want, list)
    assert took > 10
    # without sync_time: 0 for every measurement, as a measurement without it
    no_sync = [[{k: x for k, x in base.items() if k != "sync_time"}], None, None, None]
    assert _outcome({"type": PROGRESS_BATCH, "time": 60.0, "job_id": ids, "measurements": _in_columns(no_sync)}) == \
        _outcome({"type": PROGRESS_BATCH, "time": 60.0, "job_id": ids, "measurements": no_sync})
    ok = _in_columns([[base], None, [base, base], None])
    for bad, field, value in (({**ok, "extra": []}, "events[0].measurements.extra", []),
                              ({k: x for k, x in ok.items() if k != "gpus"}, "events[0].measurements.gpus", None),
                              ({**ok, "gpus": ok["gpus"][:2]}, "events[0].measurements.gpus", 2),
                              ({**ok, "nodes": 3}, "events[0].measurements.nodes", 3),
                              ({**ok, "row": "x"}, "events[0].measurements.row", "x"),
                              ({**ok, "row": [2, 0, 2]}, "events[0].measurements.row[1]", 0),
                              ({**ok, "row": [0, 2, 4]}, "events[0].measurements.row[2]", 4),
                              ({**ok, "row": [0, 2, -1]}, "events[0].measurements.row[2]", -1),
                              ({**ok, "row": [0, 2.0, 2]}, "events[0].measurements.row[1]", 2.0),
                              ("x", "events[0].measurements", "x")):
        with pytest.raises(InputError) as ei:
            progress_batch({"type": PROGRESS_BATCH, "time": 60.0, "job_id": ids, "measurements": bad}, "events[0]")
        assert (ei.value.field, ei.value.value) == (field, value), bad
    got = progress_batch({"type": PROGRESS_BATCH, "time": 60.0, "job_id": ids, "measurements": ok}, "events[0]")
    assert [len(e.measurements) for e in got] == [1, 0, 2, 0]


def test_names_passed_once_are_remembered_and_bad_ones_never(monkeypatch: pytest.MonkeyPatch) -> None:
    """The names a column check passed are kept (the same job ids come every round); a bad name is checked every
    time, beside known ones too, and the memory is emptied past its bound."""
    from schedopt.serve import columns

    monkeypatch.setattr(columns, "_NAMES_OK", set())
    monkeypatch.setattr(columns, "_NAMES_HELD", 5)
    good = ["a-0", "b-1", "c-2"]
    assert columns._names(good) and columns._NAMES_OK == set(good)
    assert columns._names(good[:2])  # known: passed from memory
    for bad in (["a-0", ""], ["a-0", "x" * 254], ["a-0", "a b"], ["a-0", 3], ["a-0", ["b-1"]], ["a-0", None]):
        assert not columns._names(bad), bad
        assert columns._NAMES_OK == set(good)
    assert columns._names(["d-3", "e-4", "f-5"]) and columns._NAMES_OK == {"d-3", "e-4", "f-5"}  # emptied first
    doc = _columns([ROWS[0], {**ROWS[1], "job_id": "a b"}])
    with pytest.raises(InputError) as e:  # a bad id among known ones still named with its row
        progress_batch(doc, "events[0]")
    assert e.value.field == "events[0].job_id[1]"


def test_an_integer_column_is_checked_as_value_by_value() -> None:
    """columns._ints (min and max of the integers) against the check of each value: null or an int (not a bool)
    in [low, high], at the edges, with huge integers, bools, floats and nulls."""
    import random

    from schedopt.serve.columns import _ints
    rng = random.Random(3)
    pool: list[Any] = [None, 0, 1, -1, 2**20, 2**20 + 1, 2**31, 2**1100, -(2**1100), True, False, 1.0, "1", 7]
    for _ in range(3000):
        col = [rng.choice(pool) for _ in range(rng.randrange(0, 5))]
        low, high = rng.choice([(0, 2**20), (1, 2**31), (-5, 5)])
        want = all(v is None or (type(v) is int and low <= v <= high) for v in col)
        assert _ints(col, low, high) is want, (col, low, high)


@pytest.mark.parametrize(("first", "second"), [("local_batch", "accumulation"), ("grad_sqr", "grad_var")])
def test_a_pair_with_nulls_in_other_rows_is_refused_as_the_general_route_does(first: str, second: str) -> None:
    # the pairs compared by the rows' types (serve.columns._paired): as many nulls in both columns, or the same
    # rows null, with integers and floats in either (an integer gradient read as a float), against the general route
    rows = [dict(r) for r in ROWS]
    one, other = (64, 2) if first == "local_batch" else (3, 0.5)
    shifted = [(None, other), (one, None), (one, other)]  # one null each, in other rows: refused
    same = [(None, None), (one, other), (float(one) if first == "grad_sqr" else one, other)]  # accepted
    for pairs, accepted in ((shifted, False), (same, True), (shifted[::-1], False)):
        for r, (a, b) in zip(rows, pairs):
            r[first], r[second] = a, b
        assert _agree(rows) is accepted, pairs


#: good values of each column (the rest drawn from test_serve_events.VALUES: every JSON type, every range's edge)
_GOOD: dict[str, list[Any]] = {
    "progress": [None, 0, 0.0, 0.25, 0.999999, -0.0], "epoch": [None, 0, 3, 2**20],
    "local_batch": [None, 1, 64, 2**31], "accumulation": [None, 0, 1, 2**20],
    "attained_gpu_seconds": [None, 0, 120.0, 1e308], "grad_sqr": [None, 0.5, 0, 2], "grad_var": [None, 2.0, 0, 1e-300]}
_M_GOOD: dict[str, list[Any]] = {
    "gpu_type": ["t4", "a100", "x" * 253], "nodes": [1, 2, 2**20], "gpus": [2, 4, 2**20],
    "local_batch": [1, 128, 2**31], "step_time": [0.25, 1, 0.06, 1e308], "sync_time": [0.0, 0, 0.05, -0.0]}


def _pick(rng: Any, good: list[Any], bad: float) -> Any:
    return rng.choice(VALUES) if rng.random() < bad else rng.choice(good)


def _random_doc(rng: Any, bad: float) -> dict[str, Any]:
    """A columnar document of 1 to 6 rows, each value good but for about ``bad`` of them (any JSON value); a pair's
    two columns often null in the same rows; the measurements in columns (rows in order) or one list a row."""
    n = rng.randrange(1, 7)
    doc: dict[str, Any] = {"type": PROGRESS_BATCH, "time": rng.choice([60.0, 61, [60.0] * n]),
                           "job_id": [f"j-{rng.randrange(9)}" if rng.random() >= bad else rng.choice(VALUES)
                                      for _ in range(n)]}
    for k, good in _GOOD.items():
        if rng.random() < 0.7:
            doc[k] = [_pick(rng, good, bad) for _ in range(n)]
    for a, b in (("local_batch", "accumulation"), ("grad_sqr", "grad_var")):
        if (a in doc) != (b in doc) and rng.random() < 0.9:  # a pair: both columns, mostly
            doc.pop(a, None) if rng.random() < 0.5 else doc.setdefault(a, [_pick(rng, _GOOD[a], bad) for _ in range(n)])
            doc.setdefault(b, [_pick(rng, _GOOD[b], bad) for _ in range(n)]) if a in doc else doc.pop(b, None)
        if a in doc and b in doc and rng.random() < 0.9:  # nulls in the same rows, mostly
            doc[b] = [None if x is None else y if y is not None else _GOOD[b][1] for x, y in zip(doc[a], doc[b])]
    if rng.random() < 0.8:
        m = rng.randrange(0, 9)
        cols = {"row": sorted(rng.randrange(n) for _ in range(m)),
                **{k: [_pick(rng, good, bad / 2) for _ in range(m)] for k, good in _M_GOOD.items()}}
        if rng.random() < 0.3:
            del cols["sync_time"]
        if rng.random() < bad:
            cols["row"] = [_pick(rng, [0], 0.5) if rng.random() < 0.3 else r for r in cols["row"]]
        flat = list(zip(*cols.values()))
        doc["measurements"] = cols if rng.random() < 0.7 else [  # or the list form: one list a row
            [dict(zip(cols, f)) for f in flat if f[0] == r] or None for r in range(n)]
        if type(doc["measurements"]) is list and any(type(r) is not int for r in cols["row"]):
            del doc["measurements"]
    return doc


def _per_element(doc: dict[str, Any]) -> Any:
    """The document read value by value (columns._slow: each row through the general route)."""
    from schedopt.serve.columns import _slow
    try:
        got = _slow(doc, len(doc["job_id"]), "events[0]")
    except InputError as exc:
        return exc.field, repr(exc.value), exc.message
    return [(e, tuple(map(type, vars(e).values()))) for e in got]


def test_random_columns_checked_at_once_agree_with_the_checks_value_by_value() -> None:
    """Random documents, good and bad values in every column: the columns checked at once (numpy, C passes) give
    the events the value-by-value route gives, or its refusal (the same field, row, value and message); both
    routes exercised, most good documents taken at once."""
    import random

    from schedopt.serve.columns import _fast
    rng = random.Random(38)
    fast = accepted = refused = 0
    for k in range(1500):
        doc = _random_doc(rng, bad=(0.0, 0.02, 0.1)[k % 3])
        want = _per_element(doc)
        assert _outcome(doc) == want, doc
        took = _fast(doc, len(doc["job_id"])) is not None
        assert not took or isinstance(want, list), doc  # nothing taken at once that value by value refuses
        fast += took
        accepted += isinstance(want, list)
        refused += not isinstance(want, list)
    assert fast > 0.9 * accepted and accepted > 300 and refused > 300, (fast, accepted, refused)


def test_a_float_column_is_checked_as_value_by_value() -> None:
    """columns._floats (one numpy pass) against the check of each value: a finite int or float (not a bool) in
    [low, high), or null where nulls are allowed; the values it gives are the floats of the column."""
    import random

    from schedopt.serve.columns import _floats
    rng = random.Random(5)
    pool: list[Any] = [None, 0, 0.0, -0.0, 1, 1.0, 0.5, -1e-300, 2**1100, 2**1023, 1e308, True, False, "1",
                       float("nan"), float("inf"), [], 7]
    for _ in range(3000):
        col = [rng.choice(pool) for _ in range(rng.randrange(0, 5))]
        low, high = rng.choice([(0.0, 1.0), (0.0, float("inf"))])
        nullable = rng.random() < 0.5

        def ok(v: Any, low: float = low, high: float = high, nullable: bool = nullable) -> bool:
            if v is None:
                return nullable
            return type(v) in (int, float) and math.isfinite(float(v)) and low <= v < high

        try:
            want = all(map(ok, col))
        except OverflowError:  # an integer beyond a float: refused (the general route says so)
            want = False
        got = _floats(col, low, high, nullable)
        assert (got is not None) is want, (col, low, high, nullable)
        if got is not None:
            assert got == [None if v is None else float(v) for v in col] and all(
                type(v) in (float, type(None)) for v in got), col
