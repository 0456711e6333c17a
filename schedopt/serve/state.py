"""The service's state file: the session's own document and what the service adds (the round, the last plan, the
last event batch's sequence number), written atomically (a temporary file in the same folder, flushed and synced,
then renamed over the old one: a crash at any instant leaves the old file or the new one, never half of one)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..live.plan import Plan

__all__ = ["SCHEMA", "VERSION", "ServiceState", "read_state"]

#: The ``schema`` field of the service's saved state document.
SCHEMA = "schedopt.serve.state"
#: The version of the service's state document this code writes (and the newest it reads).
VERSION = 1


@dataclass
class ServiceState:
    """What the service keeps beside the session: ``round`` (decisions made), ``now`` (the last decision's time),
    ``plan`` (its plan: the :class:`~schedopt.live.Plan` decided, or its document as read from the state file;
    written as the document), ``seq`` (the last event batch's sequence number, -1 for none), ``changes`` (event
    batches applied: a decision repeated with the same ``now`` and no change in between is answered from the last
    one)."""

    round: int = 0
    now: float | None = None
    plan: Plan | dict[str, Any] | None = None
    seq: int = -1
    changes: int = 0
    #: ``changes`` when the last plan was made
    plan_changes: int = -1

    def to_document(self, session: dict[str, Any]) -> dict[str, Any]:
        return {"schema": SCHEMA, "version": VERSION, "round": self.round, "now": self.now, "seq": self.seq,
                "changes": self.changes, "plan_changes": self.plan_changes, "plan": self.plan_dict(), "session": session}

    def plan_dict(self) -> dict[str, Any] | None:
        """The plan's document (:meth:`schedopt.live.Plan.to_dict`; None: no plan yet)."""
        return self.plan.to_dict() if isinstance(self.plan, Plan) else self.plan

    @classmethod
    def from_document(cls, doc: Any, where: str) -> tuple[ServiceState, dict[str, Any]]:
        """The service's part and the session's document; a malformed file is an InputError naming the field."""
        if not isinstance(doc, dict):
            raise InputError(where, doc, "must hold a JSON object")
        if doc.get("schema") != SCHEMA:
            raise InputError(f"{where}.schema", doc.get("schema"), f"must be {SCHEMA!r}")
        if doc.get("version") != VERSION:
            raise InputError(f"{where}.version", doc.get("version"), f"must be {VERSION} (this service's format)")
        known = {"schema", "version", "round", "now", "seq", "changes", "plan_changes", "plan", "session"}
        for k in doc:
            if k not in known:
                raise InputError(f"{where}.{k}", doc[k], "unknown key")
        for k in ("round", "seq", "changes", "plan_changes"):
            v = doc.get(k)
            if not isinstance(v, int) or isinstance(v, bool) or v < -1:
                raise InputError(f"{where}.{k}", v, "must be an integer >= -1")
        now = doc.get("now")
        if now is not None and (not isinstance(now, (int, float)) or isinstance(now, bool)):
            raise InputError(f"{where}.now", now, "must be a number or null")
        plan = doc.get("plan")
        if plan is not None and not isinstance(plan, dict):
            raise InputError(f"{where}.plan", plan, "must be an object or null")
        session = doc.get("session")
        if not isinstance(session, dict):
            raise InputError(f"{where}.session", session, "must be the session's document (an object)")
        return cls(doc["round"], None if now is None else float(now), plan, doc["seq"], doc["changes"],
                   doc["plan_changes"]), session


def read_state(path: Path, field: str = "state") -> dict[str, Any]:
    """The JSON document in ``path``; an unreadable or malformed file is an InputError naming ``field`` and it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(field, str(path), f"cannot be read: {exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(field, str(path), f"is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InputError(field, str(path), "must hold a JSON object")
    return doc

