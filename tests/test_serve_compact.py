"""A body declared compact (``Schedopt-Body: compact``, sent by :class:`schedopt.live.client.ServiceClient` by
default) is read without writing it back (schedopt.serve.body.parse_json's ``compact``): the same answers, plans and
state as the old protocol (no header), request for request; a false declaration gets a 4xx naming the field, never a
500, never another document."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from schedopt.live import ClusterState, Session
from schedopt.live.client import ServiceClient, ServiceSession
from schedopt.schemas import load
from schedopt.sim import Workload, WorkloadJob, cluster_preset, load_workload
from schedopt.testing.fuzz.service import run_http_case, session_cases
from schedopt.testing.serve import ServiceProcess, ServiceReplay

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("orjson")

SCHEMA = load("service")
COMPACT = ("Schedopt-Body", "compact")
_TIMINGS = ("seconds", "cpu_seconds", "events_cpu_seconds")


def _init(path: Path, policy: str) -> Path:
    path.write_text(json.dumps({"schema": "schedopt.serve.init", "version": 1, "policy": policy,
                                "cluster": ClusterState.from_cluster(cluster_preset("sia-64")).to_dict(),
                                "round_duration": 60.0}))
    return path


def _answer(a: dict[str, Any]) -> dict[str, Any]:
    """An answer without what differs between two processes: timings, and plan ids (drawn anew by each start)."""
    out = {k: v for k, v in a.items() if k not in _TIMINGS and k != "plan_id"}
    if out.get("plan_delta") is not None:
        out["plan_delta"] = {k: v for k, v in out["plan_delta"].items() if k != "since"}
    return _state(out)


_UNEQUAL = ("policy_seconds", "policy_cpu_seconds",
            "roles", "roles_sha256")  # (the policy's pickle: its caches are keyed by the ids of objects)


def _state(doc: Any) -> Any:
    """A document without the decisions' timings (and the policy's pickle)."""
    if isinstance(doc, dict):
        return {k: _state(v) for k, v in doc.items() if k not in _UNEQUAL}
    if isinstance(doc, list):
        return [_state(v) for v in doc]
    return doc


@pytest.mark.slow
def test_declared_compact_answers_equal_the_old_protocols(tmp_path: Path) -> None:
    """sia on sia-64, 64 of saturn/1's jobs all submitted at t = 0, 8 rounds with progress reports (measurements in
    columns) through two services at once, one asked with the declaration and one without: every answer (but
    timings and plan ids), every plan and the state at the end are equal. (2 to 4 s: slow; tests/test_serve.py
    asks its module's service with the declaration, the client's default, and checks its refusals.)"""
    base = load_workload("saturn/1").jobs
    wl = Workload("at-once", tuple(WorkloadJob(f"{base[k].name}-{k}", 0.0, base[k].application, base[k].num_replicas,
                                               base[k].batch_size) for k in range(64)))
    sps = [ServiceProcess(tmp_path / k, tmp_path / k / "state.json", _init(tmp_path / f"{k}.json", "sia"))
           for k in ("compact", "plain")]
    for sp in sps:
        sp.workdir.mkdir()
        sp.launch()
    try:
        replays = []
        for sp, compact in zip(sps, (True, False)):
            sp.wait_started()
            c = ServiceClient(sp.url, token_file=sp.token_file, compact=compact)
            assert c._body_headers.get("Schedopt-Body") == ("compact" if compact else None)
            sx = ServiceReplay(ServiceSession(c, columns=2, delta=True), wl, Session(cluster_preset("sia-64"), "sia"))
            sx.run(8)
            replays.append((sx, c))
        (a, ca), (b, cb) = replays
        assert len(a.plans) == len(b.plans) == 8
        assert [p.to_dict()["jobs"] for p in a.plans] == [p.to_dict()["jobs"] for p in b.plans]
        got, want = ([_answer(x) for x in s.session.answers] for s in (a, b))  # type: ignore[attr-defined]
        assert got == want and sum(x["applied"] for x in got) > 200
        assert _state(ca.state()) == _state(cb.state())
    finally:
        for sp in sps:
            sp.stop()
    for sp in sps:
        assert "Traceback" not in sp.log_text()


@pytest.mark.slow
def test_fuzz_every_endpoint_with_the_declaration(tmp_path: Path) -> None:
    """The service's whole fuzz (malformed JSON, unknown and missing fields, wrong types, NaN, huge payloads,
    unknown jobs and nodes, events out of order, no token, a wrong token), every request declared compact: a 4xx
    naming the field every time, no 500, no hang; and every refusal of a body that does not depend on the session
    is the one the same body gets without the declaration, status, field and message."""
    sp = ServiceProcess(tmp_path, tmp_path / "state.json", _init(tmp_path / "init.json", "tiresias"),
                        extra=("--max-body", "65536"))
    with sp:
        with sp.client() as c:
            c.decide(60.0)
        cases = session_cases(sp.token, 65536, 120.0)
        declared = [dataclasses.replace(k, headers=(*k.headers, COMPACT)) for k in cases]
        failures = [o.repro() for k in declared if (o := run_http_case(sp.port, k, timeout=10.0, schema=SCHEMA)).failed]
        assert not failures, "\n".join(failures[:30])
        with sp.client() as c:
            assert c.health() and c.decide(180.0)["status"] == "ok"
        same = [k for k in cases if not k.may_accept and k.field is not None and k.path == "/v1/decide"
                and "size limit" not in k.label and "events" not in k.field and "order" not in k.label
                and "before" not in k.label]
        assert len(same) > 30
        for k in same:
            plain = run_http_case(sp.port, k, timeout=10.0, schema=SCHEMA)
            decl = run_http_case(sp.port, dataclasses.replace(k, headers=(*k.headers, COMPACT)), timeout=10.0,
                                 schema=SCHEMA)
            assert plain.status == decl.status == "named" and plain.detail == decl.detail, (k, plain, decl)
    assert "Traceback" not in sp.log_text()
