"""A session's state as a versioned JSON document, written atomically (:meth:`schedopt.live.Session.save`).

The document holds everything a decision depends on: the cluster state, every job's state (kind, caps, restart
count, configuration, batch, progress, the measurements its estimate is fitted to), the placement in the cluster's
node names and GPU indices, the last plan, and the roles (policy, placer, admission rule) with their own state
(Tiresias' queues, Sia's configuration change times, Gavel's time shares) as a pickle of the objects. The
estimator's fits are a function of the saved measurements alone (``schedopt.sim.jobs.fitted_estimate``, one
deterministic fit per measurement set), so a restored session refits them to the same values. A restored session
decides as the uninterrupted one would (tested round for round, across processes).

The pickle is read back only from a document the session wrote itself (it runs code when loaded: keep the state
file where only the service can write, as any service's state); its SHA-256 is checked first.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from ..errors import InputError

__all__ = ["SCHEMA", "VERSION", "encode_document", "read_document", "remove_temporaries", "same_file", "write_document"]

#: The ``schema`` field of a saved session document.
SCHEMA = "schedopt.live.session"
#: The version of the saved session document this code writes (and the newest it reads).
VERSION = 1

def _temporary_parts(path: str) -> tuple[str, str, str]:
    """(folder, prefix, suffix) of the temporary files :func:`write_document` makes for ``path``."""
    d, name = os.path.split(os.path.abspath(path))
    return d, f".{name}.", ".tmp"


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether the paths ``a`` and ``b`` name the same file (made absolute, not resolved)."""
    return os.path.abspath(a) == os.path.abspath(b)


def remove_temporaries(path: str | os.PathLike[str]) -> list[str]:
    """Remove the temporary files a save to ``path`` left behind when its process was killed mid-save (named
    ``.<name>.<random>.tmp`` beside it; a file of any other name is left alone); the paths removed. Call it only
    where no other process is saving to ``path`` (the service does at start)."""
    d, prefix, suffix = _temporary_parts(os.fspath(path))
    try:
        names = os.listdir(d)
    except OSError:
        return []
    out = []
    for n in names:
        if n.startswith(prefix) and n.endswith(suffix) and len(n) > len(prefix) + len(suffix):
            full = os.path.join(d, n)
            try:
                os.unlink(full)
            except OSError:
                continue
            out.append(full)
    return out


def encode_document(doc: Mapping[str, Any]) -> str:
    """``doc`` as the compact JSON text :func:`write_document` writes (a non-finite number is a ValueError).

    One ``json.dumps`` (``json.dump`` to a file encodes chunk by chunk: 3x slower on the 5 MB document of 2,048
    GPUs), without the encoder's check for circular references (a document made of new containers has none; one
    that had would raise RecursionError instead of ValueError: refused all the same): the same text, about 10%
    less CPU. orjson is not used here: it writes NaN as null, and proving a 5 MB document free of NaN by reading
    it back (orjson.loads and a comparison, about 32 ms) costs as much as Python's json writing it (about 40 ms)."""
    return json.dumps(doc, allow_nan=False, separators=(",", ":"), check_circular=False)


def write_document(path: str, doc: Mapping[str, Any]) -> None:
    """``doc`` as JSON at ``path``, atomically: a temporary file beside it (``.<name>.<random>.tmp``, which
    :func:`remove_temporaries` finds should the process die mid-save), flushed and fsynced, renamed over ``path``,
    and the directory fsynced (a crash leaves the old file or the new one, never a torn one)."""
    if not isinstance(path, (str, os.PathLike)):
        raise InputError("path", path, "must be a file path")
    path = os.fspath(path)
    d, prefix, suffix = _temporary_parts(path)
    text = encode_document(doc)
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
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
