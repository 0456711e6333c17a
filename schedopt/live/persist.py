"""A session's state as a versioned JSON document, written atomically (:meth:`schedopt.live.Session.save`).

The document holds everything a decision depends on: the cluster state, every job's state (kind, caps, restart
count, configuration, batch, progress, the measurements its estimate is fitted to), the placement in the cluster's
node names and GPU indices, the last plan, and the roles (policy, placer, admission rule) with their own state
(Tiresias' queues, Sia's configuration change times, Gavel's time shares) as a pickle of the objects. The
estimator's fits are a function of the saved measurements alone (:func:`schedopt.sim.jobs.fitted_estimate`, one
deterministic fit per measurement set), so a restored session refits them to the same values. A restored session
decides as the uninterrupted one would (tested round for round, across processes).

The pickle is read back only from a document the session wrote itself (it runs code when loaded: keep the state
file where only the service can write, as any service's state); its SHA-256 is checked first.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..goodput import JobGoodputModel
from ..sia import Config
from ..sim.jobs import JobModel
from .session import Plan, _LiveState
from .state import ClusterState

if TYPE_CHECKING:
    from ..sim.policies.base import Policy
    from ..sim.roles import Admission, Placer
    from .session import Session

__all__ = ["SCHEMA", "VERSION", "read_document", "session_document", "session_from_document", "write_document"]

SCHEMA = "schedopt.live.session"
VERSION = 1

_JOB_FIELDS = ("id", "app", "arrival", "requested_gpus", "batch_size", "adaptive", "epoch", "restart_left",
               "restarts", "started", "start", "attained", "max_profiled", "local_bsz", "accum", "estimator",
               "live_kind", "frac")


def _config(c: Config | None) -> list[Any] | None:
    return None if c is None else [c.n_nodes, c.n_gpus, c.gpu_type]


def session_document(s: Session) -> dict[str, Any]:
    roles = pickle.dumps((s.policy, s.placer, s.admission), protocol=pickle.HIGHEST_PROTOCOL)
    jobs = []
    for admitted, j in [*((True, j) for j in s.jobs.values()), *((False, j) for j in s.pending)]:
        d = {k: getattr(j, k) for k in _JOB_FIELDS}
        d["admitted"] = admitted
        d["config"] = _config(j.config)
        d["measured"] = [[*k, *v] for k, v in sorted(j.measured.items())]
        jobs.append(d)
    jm = s.base_job_model
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "settings": {"round_duration": s.round_duration, "job_model": jm.name, "estimator": s.estimator,
                     "adaptive": s.adaptive, "policy_name": s.policy_name, **{k: v for k, v in s.specs.items()}},
        "cluster": s.cluster_state.to_dict(),
        "time": s.time,
        "round_index": s.round_index,
        "events_time": s._events_time,
        "dirty": s._dirty,
        "jobs": jobs,
        "placement": [{"job_id": j, "slots": [[n, list(g)] for n, g in slots], "config": _config(s.configs.get(j))}
                      for j, slots in s.where.items()],
        "closed": dict(s.closed),
        "profiles": {app: m.to_dict() for app, (_, m) in s._apps.items()},
        "plan": None if s.plan is None else s.plan.to_dict(),
        "roles": base64.b64encode(roles).decode("ascii"),
        "roles_sha256": hashlib.sha256(roles).hexdigest(),
    }


def session_from_document(cls: type[Session], doc: Mapping[str, Any], *, policy: Policy | str | None,
                          placer: Placer | str | None, admission: Admission | str | None,
                          job_model: str | JobModel | None, state_path: str | None) -> Session:
    if not isinstance(doc, Mapping) or doc.get("schema") != SCHEMA:
        raise InputError("document.schema", doc.get("schema") if isinstance(doc, Mapping) else type(doc).__name__,
                         f"must be {SCHEMA!r}")
    if doc.get("version") != VERSION:
        raise InputError("document.version", doc.get("version"), f"this schedopt reads version {VERSION}")
    try:
        blob = base64.b64decode(doc["roles"])
        if hashlib.sha256(blob).hexdigest() != doc["roles_sha256"]:
            raise InputError("document.roles", doc["roles_sha256"], "does not match its SHA-256: the file is damaged")
        saved = pickle.loads(blob)  # the session's own state file (see the module doc)
    except (KeyError, ValueError, TypeError, pickle.UnpicklingError, AttributeError, ImportError) as e:
        raise InputError("document.roles", "…", f"cannot be read back ({type(e).__name__}: {e})") from None
    st = doc["settings"]
    if job_model is None:
        job_model = st["job_model"]
    s = cls(ClusterState.from_dict(doc["cluster"], "document.cluster"), policy if policy is not None else saved[0],
            placer=placer if placer is not None else saved[1],
            admission=admission if admission is not None else saved[2],
            round_duration=st["round_duration"], job_model=job_model, estimator=st["estimator"],
            adaptive=st["adaptive"], state_path=state_path)
    s.specs = {k: st.get(k) for k in ("policy", "placer", "admission")}
    for app, d in doc["profiles"].items():
        from .session import _profile_application

        m = JobGoodputModel.from_dict(d)
        s._apps[app] = (_profile_application(m), m)
    if s._apps:
        import dataclasses

        s.jm = dataclasses.replace(s.base_job_model, apps={**s.base_job_model.apps, **s._apps})
    for d in doc["jobs"]:
        j = _LiveState(d["id"], d["app"], d["arrival"], d["requested_gpus"], d["batch_size"], d["adaptive"], s.jm,
                       estimator=d["estimator"], live_kind=d["live_kind"])
        for k in _JOB_FIELDS[6:]:
            setattr(j, k, d[k])
        j.config = None if d["config"] is None else Config(*d["config"])
        j.measured = {(m[0], m[1], m[2], m[3]): (m[4], m[5]) for m in d["measured"]}
        j.seen = tuple(sorted(j.measured))
        if d["admitted"]:
            s.jobs[j.id] = j
        else:
            s.pending.append(j)
    for p in doc["placement"]:
        s.where[p["job_id"]] = [(n, tuple(g)) for n, g in p["slots"]]
        if p["config"] is not None:
            s.configs[p["job_id"]] = Config(*p["config"])
    s.closed = dict(doc["closed"])
    s.time, s.round_index = doc["time"], doc["round_index"]
    s._events_time, s._dirty = doc["events_time"], doc["dirty"]
    s.plan = None if doc["plan"] is None else Plan.from_dict(doc["plan"])
    s._sync_nodes(s.layout())
    return s


def write_document(path: str, doc: Mapping[str, Any]) -> None:
    """``doc`` as JSON at ``path``, atomically: a temporary file beside it, flushed and fsynced, renamed over
    ``path``, and the directory fsynced (a crash leaves the old file or the new one, never a torn one)."""
    if not isinstance(path, (str, os.PathLike)):
        raise InputError("path", path, "must be a file path")
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, allow_nan=False, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dfd = os.open(d, os.O_RDONLY)
    except OSError:  # pragma: no cover - a platform without directory handles
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def read_document(path: str) -> dict[str, Any]:
    """The JSON document at ``path`` (a clear error for a missing or damaged file)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise InputError("path", path, "no saved session there") from None
    except (OSError, ValueError) as e:
        raise InputError("path", path, f"is not a readable session document ({e})") from None
    if not isinstance(doc, dict):
        raise InputError("path", path, "is not a session document")
    return doc
