"""A sweep's records streamed by its workers (``run_tasks(stream=True)``, ``schedopt simulate -o``; issue 42 item 2):
the same record bytes as one written from memory, a light result (meta and summary), ``--resume`` of a streamed
folder, and a record a worker finished but the sweep never named (the sweep killed between the two)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from schedopt.sim import SimTask
from schedopt.sim.metrics import summary_row
from schedopt.sim.records import RecordStream, StoredRecords, mask_wall_clock, read_record, record_view
from schedopt.sim.runs import _call, _Output, run_tasks

TIMING = ("policy_s_median", "policy_s_p95", "policy_s_max", "policy_s_total", "policy_cpu_s_median",
          "policy_cpu_s_p95")


def _masked(p: Path) -> str:
    return hashlib.sha256(mask_wall_clock(p.read_text()).encode()).hexdigest()


def _row(r: object) -> dict[str, object]:
    return {k: v for k, v in summary_row(r).items() if k not in TIMING}  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def twenty(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The first 20 jobs of Pollux's workload-1 with at most 4 GPUs each: they finish out of arrival order."""
    from schedopt.sim import load_workload
    from schedopt.sim.workloads import Workload

    w = load_workload("pollux/1")
    p = tmp_path_factory.mktemp("wl") / "twenty.csv"
    p.write_text(Workload("twenty", tuple(j for j in w.jobs if j.num_replicas <= 4)[:20]).to_csv())
    return str(p)


@pytest.mark.parametrize("policy", ["fifo", "tiresias", pytest.param("sia", marks=pytest.mark.slow)])
def test_a_streamed_record_is_the_record_written_from_memory(twenty: str, tmp_path: Path, policy: str) -> None:
    """Jobs finish out of the workload's order: the streamed record (written as they finish) still lists them in
    the workload's order, byte for byte what a record written at the end holds (masked wall times)."""
    task = SimTask(policy, twenty, cluster="pollux")
    (mem,) = run_tasks([task], output_dir=tmp_path / "mem", progress=False)
    (light,) = run_tasks([task], output_dir=tmp_path / "stream", progress=False, stream=True)
    (a,), (b,) = list((tmp_path / "mem").glob("*.jsonl")), list((tmp_path / "stream").glob("*.jsonl"))
    assert a.name == b.name and _masked(a) == _masked(b)
    assert light.jobs == () and light.rounds == () and light.meta == mem.meta  # type: ignore[union-attr]
    assert _row(light) == _row(mem) == _row(read_record(b))
    finish = [j.id for j in sorted(mem.jobs, key=lambda j: j.finish or 0.0)]  # type: ignore[union-attr]
    assert [j.id for j in mem.jobs] != finish  # type: ignore[union-attr]
    assert sorted(p.name for p in (tmp_path / "stream").iterdir()) == sorted([b.name, "summary.csv"])  # no spool


def test_resume_of_a_streamed_folder_reads_the_records_one_at_a_time(small_csv: str, tmp_path: Path) -> None:
    tasks = [SimTask(p, small_csv, cluster="pollux") for p in ("fifo", "tiresias")]
    first = run_tasks(tasks, output_dir=tmp_path, progress=False, stream=True)
    stamps = {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("*.jsonl")}
    again = run_tasks(tasks, output_dir=tmp_path, progress=False, stream=True, resume=True)
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("*.jsonl")} == stamps  # nothing ran again
    assert [_row(r) for r in again] == [_row(r) for r in first]
    view = record_view(next(tmp_path.glob("fifo*.jsonl")))
    assert isinstance(view.jobs, StoredRecords) and len(view.jobs) == 12
    assert [j.id for j in view.jobs] == [j.id for j in read_record(next(tmp_path.glob("fifo*.jsonl"))).jobs]


def test_a_record_finished_but_not_named_is_adopted_on_resume(small_csv: str, tmp_path: Path) -> None:
    """The worker wrote the whole record beside (``.<stem>.record``) and the sweep was killed before naming it:
    ``resume`` names it and does not run the task again."""
    task = SimTask("fifo", small_csv, cluster="pollux")
    (mem,) = run_tasks([task], output_dir=tmp_path / "mem", progress=False)
    out = tmp_path / "out"
    out.mkdir()
    _call(task, None, _Output(str(out)))
    (staged,) = out.glob(".*.record")
    (res,) = run_tasks([task], output_dir=out, progress=False, stream=True, resume=True)
    assert not staged.exists()
    (rec,) = out.glob("*.jsonl")
    assert _masked(rec) == _masked(next((tmp_path / "mem").glob("*.jsonl")))
    assert _row(res) == _row(mem)


def test_a_spool_cut_below_its_checkpoint_is_named(tmp_path: Path) -> None:
    from schedopt.sim.records import RecordError

    s = RecordStream(tmp_path / "r.jsonl", spool="x")
    s.release()
    with pytest.raises(RecordError, match=r"is shorter \(0 bytes\) than its checkpoint says \(10\)"):
        RecordStream(tmp_path / "r.jsonl", spool="x", resume_at=(10, 0, 1, 0))
