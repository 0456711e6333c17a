"""The service's journal: every change since the last snapshot of the state, appended and synced before it is
answered.

The state file (:mod:`.state`) is a snapshot: the whole session's document, written atomically. Writing it takes
time proportional to the cluster (about 60 ms of CPU at 2,048 GPUs and 4,096 jobs, 3 to 6 MB), so the service
writes it only every few decisions (``--snapshot-every``) and at a clean stop. Between two snapshots each change
is one record appended here: the request's own body as it came (an event batch, or a decision request with the
events it carried), with the round and the count of event batches it leads to. Appending it costs a write and an
fsync of bytes the service already holds. At start the service reads the snapshot, then applies the records after
it, in order, through the same code (the events applied, each decision made again: decisions are a function of
the state, the events and the time, which is what a restored session is tested for), then takes a new snapshot.

A record is ``SJ1 <op> <round> <changes> <length> <crc32>\\n`` then ``<length>`` bytes of the body then ``\\n``;
``op`` is ``events`` (the body's events only) or ``decide`` (its events, then the decision at its ``now``). A
record cut short by a crash (it was never answered: a record is synced before its answer is sent) fails its
length or checksum; it and anything after it are ignored.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

__all__ = ["Journal", "Record", "journal_path", "read_journal"]

_MAGIC = b"SJ1"
OPS = ("events", "decide")


@dataclass(frozen=True)
class Record:
    """One change: ``op`` (``events`` or ``decide``), the request ``body``, and the service's ``round`` and
    ``changes`` (event batches applied) once it is applied."""

    op: str
    round: int
    changes: int
    body: bytes


def journal_path(state: Path) -> Path:
    """The journal beside the state file ``state`` (``state.json`` -> ``state.json.journal``)."""
    return state.with_name(state.name + ".journal")


def read_journal(path: Path) -> list[Record]:
    """The complete records of the journal at ``path`` (none when it does not exist); a torn or damaged record and
    what follows it are left out (a record is answered only once it is synced whole)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InputError("journal", str(path), f"cannot be read: {exc}") from None
    out: list[Record] = []
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        if end < 0:
            break
        head = data[pos:end].split(b" ")
        if len(head) != 6 or head[0] != _MAGIC or head[1].decode("ascii", "replace") not in OPS:
            break
        try:
            rnd, changes, length, crc = int(head[2]), int(head[3]), int(head[4]), int(head[5], 16)
        except ValueError:
            break
        body = data[end + 1: end + 1 + length]
        if len(body) != length or data[end + 1 + length: end + 2 + length] != b"\n" or zlib.crc32(body) != crc:
            break
        out.append(Record(head[1].decode("ascii"), rnd, changes, body))
        pos = end + 2 + length
    return out


class Journal:
    """The journal file at ``path``, open for appending. :meth:`append` writes one record and syncs it;
    :meth:`reset` empties the file (once a snapshot holds every record)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.records = len(read_journal(self.path))
        self.size = os.fstat(self._fd).st_size

    def append(self, op: str, round_: int, changes: int, body: bytes) -> None:
        """Append one record and sync it to disk (it is durable when this returns)."""
        assert op in OPS
        head = b"%s %s %d %d %d %08x\n" % (_MAGIC, op.encode("ascii"), round_, changes, len(body), zlib.crc32(body))
        data = b"".join((head, body, b"\n"))
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        os.fsync(self._fd)
        self.records += 1
        self.size += len(data)

    def reset(self) -> None:
        """Empty the journal (the snapshot written before holds all it had)."""
        os.ftruncate(self._fd, 0)
        os.fsync(self._fd)
        self.records = 0
        self.size = 0

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
