"""The service's state on disk: a snapshot (the state file) every few decisions and a journal of every change in
between (schedopt.serve.journal), in process (the restart of a real process, SIGKILLed mid-replay, is
tests/test_serve.py's):

* a journal's records read back whole; a record cut short or damaged, and what follows it, left out;
* a service restored from its snapshot and journal holds the state of the one that wrote them and goes on to the
  same decisions; a journal that does not follow its state file is refused, naming it;
* a batch refused half-way leaves the state as it was, also when the journal holds changes after the snapshot;
* the temporary file a save killed mid-write leaves is removed at the next start, and nothing else is.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from schedopt.errors import InputError
from schedopt.live import Session
from schedopt.live.persist import remove_temporaries, write_document
from schedopt.serve.adapter import LiveSession, open_session
from schedopt.serve.journal import Journal, Record, journal_path, read_journal
from schedopt.serve.service import DecideRequest, EventsRequest, Service
from schedopt.sim import cluster_preset


def _submitted(jid: str, t: float, gpus: int = 2, app: str = "cifar10") -> dict[str, Any]:
    return {"type": "JobSubmitted", "time": t, "job": {"id": jid, "application": app, "submitted": t,
                                                        "requested_gpus": gpus}}


def _progress(jid: str, t: float, frac: float) -> dict[str, Any]:
    return {"type": "JobProgress", "time": t, "job_id": jid, "progress": frac, "epoch": 1}


def _service(state: Path, snapshot_every: int = 3) -> Service:
    """A service on ``state`` as ``schedopt serve`` opens it: restored from the file and its journal when there."""
    existed = state.exists()
    if existed:
        session, meta = open_session(state, None)
    else:
        session, meta = LiveSession(Session(cluster_preset("sia-64"), "tiresias")), None
    records = read_journal(journal_path(state)) if existed else []
    svc = Service(session, state, 30.0, meta, journal=Journal(journal_path(state)), snapshot_every=snapshot_every)
    if not existed:
        svc.save()
    else:
        svc.replay(records)
    return svc


def _rounds(svc: Service, start: int, n: int) -> list[Any]:
    """``n`` rounds from round ``start``: jobs submitted, progress reported, a decision each (plans without their
    timing fields)."""
    async def run() -> list[Any]:
        out = []
        for k in range(start, start + n):
            t = 60.0 * k
            await svc.events(EventsRequest([_submitted(f"j{k}", t, 1 + k % 4)]))
            events = [_progress(f"j{i}", t, min(0.9, 0.01 * (k - i + 1))) for i in range(max(start, k - 3), k)]
            answer = await svc.decide(DecideRequest(t + 1.0, events=events or None))
            svc.answered()
            await svc._saved()
            out.append({k: v for k, v in answer["plan"].items() if not k.startswith("policy_")})
        return out

    return asyncio.run(run())


def _state(svc: Service) -> dict[str, Any]:
    doc = svc.meta.to_document(svc.session.to_document())
    doc["session"] = {k: v for k, v in doc["session"].items() if k not in ("plan", "roles", "roles_sha256")}
    doc["plan"] = None
    return doc


def test_journal_records_read_back_and_a_torn_tail_is_left_out(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j")
    bodies = [b'{"now": 1}', b"", b'{"events": [], "seq": 3}' * 100]
    for k, b in enumerate(bodies):
        j.append("decide" if k % 2 == 0 else "events", k, 2 * k, b)
    assert read_journal(tmp_path / "j") == [Record("decide" if k % 2 == 0 else "events", k, 2 * k, b)
                                            for k, b in enumerate(bodies)]
    whole = (tmp_path / "j").read_bytes()
    for cut in (len(whole) - 1, len(whole) - 5, len(whole) - len(bodies[2]) - 3):  # a crash mid-append
        (tmp_path / "j").write_bytes(whole[:cut])
        assert [r.body for r in read_journal(tmp_path / "j")] == bodies[:2]
    damaged = whole.replace(b'"seq": 3}{', b'"seq": 4}{', 1)  # one byte of the last body changed
    (tmp_path / "j").write_bytes(damaged)
    assert [r.body for r in read_journal(tmp_path / "j")] == bodies[:2]
    assert read_journal(tmp_path / "none") == []
    j.reset()
    assert (tmp_path / "j").stat().st_size == 0 and j.records == 0
    j.close()


def test_a_restored_service_holds_the_state_and_makes_the_same_decisions(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    a = _service(state)
    first = _rounds(a, 0, 7)  # 7 decisions: snapshots after the 3rd and 6th, the 7th in the journal only
    assert json.loads(state.read_text())["round"] == 6
    assert [r.op for r in read_journal(journal_path(state))] == ["events", "decide"]  # the 7th round's
    (tmp_path / "b").mkdir()  # the files as a killed service left them, for another service: a restart
    for f in (state, journal_path(state)):
        shutil.copy(f, tmp_path / "b" / f.name)
    b = _service(tmp_path / "b" / "state.json")
    assert b.meta.round == 7 and _state(b) == _state(a)
    assert _rounds(b, 7, 4) == _rounds(a, 7, 4)  # and then the same decisions
    assert len(first) == 7 and all(p["jobs"] for p in first)


def test_a_journal_of_another_state_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    _rounds(_service(state, snapshot_every=100), 0, 3)
    other = tmp_path / "other.json"
    _rounds(_service(other, snapshot_every=1), 5, 1)  # another job, at another time
    journal_path(other).write_bytes(journal_path(state).read_bytes())
    with pytest.raises(InputError) as ei:
        _service(other)
    assert ei.value.field == "journal"


def test_a_refused_batch_leaves_the_state_with_its_journal(tmp_path: Path) -> None:
    svc = _service(tmp_path / "state.json", snapshot_every=100)
    _rounds(svc, 0, 4)  # 4 decisions after the snapshot: all in the journal
    before = _state(svc)
    with pytest.raises(InputError) as ei:  # the third event names no job: the two before it are taken back
        asyncio.run(svc.events(EventsRequest([_submitted("new", 300.0), _progress("j1", 300.0, 0.5),
                                              _progress("nope", 300.0, 0.5)])))
    assert ei.value.field == "events[2].job_id" and ei.value.value == "nope"
    assert _state(svc) == before
    assert asyncio.run(svc.events(EventsRequest([_submitted("new", 300.0)])))["applied"] == 1


def test_a_save_killed_mid_write_leaves_nothing_at_the_next_start(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    write_document(str(state), {"x": 1})
    left = [tmp_path / ".state.json.k2j4a_x.tmp", tmp_path / ".state.json.0.tmp"]  # as mkstemp names them
    keep = [tmp_path / ".other.json.k2j4a_x.tmp", tmp_path / "state.json.tmp", tmp_path / ".state.json.tmp"]
    for p in [*left, *keep]:
        p.write_text("{")
    assert sorted(remove_temporaries(state)) == sorted(map(str, left))
    assert all(p.exists() for p in keep) and not any(p.exists() for p in left)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["state.json", *(p.name for p in keep)])


def test_session_restore_removes_what_a_killed_save_left(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    Session(cluster_preset("sia-64"), "tiresias").save(str(path))
    (tmp_path / ".s.json.abc123.tmp").write_text("{")
    Session.restore(str(path), state_path=str(tmp_path / "elsewhere.json"))  # saves elsewhere: not its file
    assert (tmp_path / ".s.json.abc123.tmp").exists()
    s = Session.restore(str(path))
    assert s.state_path == str(path) and not (tmp_path / ".s.json.abc123.tmp").exists()


def test_event_batches_alone_do_not_grow_the_journal_without_end(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import schedopt.serve.service as service

    monkeypatch.setattr(service, "JOURNAL_LIMIT", 600)
    state = tmp_path / "state.json"
    svc = _service(state, snapshot_every=100)
    for k in range(8):  # about 175 bytes a record: a snapshot once the journal passes 600
        asyncio.run(svc.events(EventsRequest([_submitted(f"e{k}", 0.0)])))
        snap = json.loads(state.read_text())["changes"]
        held = [r.changes for r in read_journal(journal_path(state))]
        assert journal_path(state).stat().st_size <= 600 and held == list(range(snap + 1, k + 2))
    assert json.loads(state.read_text())["changes"] >= 4  # snapshots were taken (no decision asked for one)
