"""Issue 41, the trace surfaces: damaged and hostile trace files are named errors (file, row, field) or counted skips
under ``skip_bad`` with the count true; the ``schedopt trace`` options are checked by name; ``--json`` is strict.
Each test fails on the code before issue 41 (the failure it pins is said in its docstring)."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
from pathlib import Path

import pytest

from schedopt import traces
from schedopt.cli import main
from schedopt.errors import InputError

D = Path(__file__).resolve().parent / "data" / "traces"
HEAD = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"


def _job(i: int, **kw: object) -> dict[str, object]:
    job: dict[str, object] = {"status": "Pass", "vc": "vc1", "jobid": f"app_{i}", "user": "u1",
                              "submitted_time": "2017-10-07 01:11:39",
                              "attempts": [{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23",
                                            "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]}]}
    job.update(kw)
    return job


def _philly(tmp_path: Path, text: str, name: str = "log.json") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _helios_rows(n: int) -> list[str]:
    return [f"{1000 + i},u{i},vc1,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:51:01,600,0"
            for i in range(n)]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


# --- Philly JSON ------------------------------------------------------------------------------------------------------

def test_philly_array_cut_after_an_element_is_a_named_error(tmp_path):
    """Before: a file cut after the 4th of 5 elements read as a valid trace of 4 jobs."""
    whole = json.dumps([_job(i) for i in range(5)])
    cut = whole[: whole.index(', {"status"', len(whole) // 2 + 200)]
    p = _philly(tmp_path, cut)
    with pytest.raises(InputError, match=r"log\.json.*ends before the array's closing"):
        traces.read_philly(p)
    with pytest.raises(InputError, match="ends before"):
        traces.read_philly(p, skip_bad=True)  # a cut file is not a bad row: nothing says how much is lost
    p2 = _philly(tmp_path, json.dumps([_job(i) for i in range(3)])[:-1] + ",", "comma.json")
    with pytest.raises(InputError, match="ends before"):
        traces.read_philly(p2)


def test_philly_two_arrays_back_to_back_is_a_named_error(tmp_path):
    """Before: the second array was dropped without a word."""
    p = _philly(tmp_path, json.dumps([_job(0)]) + "\n" + json.dumps([_job(1)]))
    with pytest.raises(InputError, match=r"log\.json:char \d+.*after the array's closing"):
        traces.read_philly(p)
    ok = _philly(tmp_path, json.dumps([_job(0), _job(1)]) + "\n\n", "ok.json")
    assert len(traces.read_philly(ok)) == 2  # trailing white space is fine


def test_philly_missing_and_doubled_commas_are_named(tmp_path):
    with pytest.raises(InputError, match="expected ',' or ']'"):
        traces.read_philly(_philly(tmp_path, "[" + json.dumps(_job(0)) + " " + json.dumps(_job(1)) + "]"))
    with pytest.raises(InputError, match="is not valid JSON"):
        traces.read_philly(_philly(tmp_path, "[" + json.dumps(_job(0)) + ",," + json.dumps(_job(1)) + "]", "b.json"))


def test_philly_gpus_as_a_string_is_a_named_row_error_not_nine_gpus(tmp_path):
    """Before: ``"gpus": "gpu0,gpu1"`` counted the string's 9 characters as 9 GPUs."""
    bad = _job(0, attempts=[{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23",
                             "detail": [{"ip": "m1", "gpus": "gpu0,gpu1"}]}])
    p = _philly(tmp_path, json.dumps([bad, _job(1)]))
    with pytest.raises(InputError) as e:
        traces.read_philly(p)
    assert e.value.field == f"{p}:row 1.attempts[0].detail[0].gpus" and e.value.value == "gpu0,gpu1"
    assert "must be a list of GPU names" in e.value.message
    tr = traces.read_philly(p, skip_bad=True)
    assert [j.job_id for j in tr] == ["app_1"] and tr.jobs[0].gpus == 2 and len(tr.skipped) == 1


@pytest.mark.parametrize(("attempts", "field"), [
    ([1], "attempts[0]"),
    ([{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23", "detail": [{"ip": "m1", "gpus": -3}]}],
     "attempts[0].detail[0].gpus"),
    ([{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23", "detail": 5}], "attempts[0].detail"),
    ([{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23", "detail": ["m1"]}],
     "attempts[0].detail[0]"),
    ("x", "attempts"),
])
def test_philly_malformed_attempts_are_named_row_errors(tmp_path, attempts, field):
    """Before: ``attempts: [1]`` raised AttributeError, ``"gpus": -3`` TypeError (exit 4)."""
    p = _philly(tmp_path, json.dumps([_job(0, attempts=attempts)]))
    with pytest.raises(InputError) as e:
        traces.read_philly(p)
    assert e.value.field == f"{p}:row 1.{field}"


def test_philly_nested_100000_deep_is_a_named_error(tmp_path):
    """Before: RecursionError (exit 4)."""
    p = _philly(tmp_path, "[" + "[" * 100_000 + "]" * 100_000 + "]")
    with pytest.raises(InputError, match=r"row 1.*nested too deep"):
        traces.read_philly(p)


# --- encodings and compression ---------------------------------------------------------------------------------------

def test_latin1_user_name_is_a_named_row_and_field_error_in_every_format(tmp_path):
    """Before: UnicodeDecodeError (exit 4) from every reader."""
    rows = _helios_rows(3)
    rows[1] = rows[1].replace(",u1,", ",caf\u00e9,")
    p = tmp_path / "cluster_log.csv"
    p.write_bytes(("\n".join([HEAD, *rows]) + "\n").encode("latin-1"))
    with pytest.raises(InputError) as e:
        traces.read_helios(p)
    assert e.value.field == f"{p}:row 3.user" and "is not UTF-8 text" in e.value.message
    assert e.value.value == "b'caf\\xe9'"
    tr = traces.read_helios(p, skip_bad=True)
    assert [j.job_id for j in tr] == ["1000", "1002"] and [r for r, _ in tr.skipped] == [3]
    j = _philly(tmp_path, "", "latin.json")
    j.write_bytes(json.dumps([_job(0), _job(1, user="caf\u00e9")], ensure_ascii=False).encode("latin-1"))
    with pytest.raises(InputError) as e:
        traces.read_philly(j)
    assert e.value.field == f"{j}:row 2.user"
    g = tmp_path / "x.trace"
    g.write_bytes(b"ResNet-18 (batch size 16)\tcmd\t1\t0\t3000\t0\t1\n" + b"caf\xe9\tcmd\t1\t0\t3000\t0\t1\n")
    with pytest.raises(InputError) as e:
        traces.read_gavel(g)
    assert e.value.field == f"{g}:row 2.job_type"


@pytest.mark.parametrize("fmt", ["helios", "philly", "gavel", "philly-csv", "pai2023", "acme"])
def test_binary_bytes_are_a_named_error(tmp_path, fmt):
    p = tmp_path / {"philly": "b.json", "gavel": "b.trace"}.get(fmt, "b.csv")
    p.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(InputError):
        traces.read_trace(p, fmt)


def test_truncated_and_fake_gzip_are_named_errors(tmp_path):
    """Before: EOFError / BadGzipFile (exit 4)."""
    data = gzip.compress(("\n".join([HEAD, *_helios_rows(2000)]) + "\n").encode())
    cut = tmp_path / "cut.csv.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"cut\.csv\.gz.*damaged gzip"):
        traces.read_helios(cut)
    with pytest.raises(InputError, match="damaged gzip"):
        traces.read_helios(cut, skip_bad=True)  # the rows after the cut are lost: not a countable skip
    fake = tmp_path / "fake.csv.gz"
    fake.write_text("\n".join([HEAD, *_helios_rows(2)]) + "\n")
    with pytest.raises(InputError, match=r"fake\.csv\.gz.*damaged gzip"):
        traces.read_trace(fake, "helios")
    whole = tmp_path / "whole.csv.gz"
    whole.write_bytes(data)
    assert len(traces.read_helios(whole)) == 2000


# --- CSV quoting -----------------------------------------------------------------------------------------------------

def test_unterminated_quote_under_skip_bad_counts_every_row_it_swallows(tmp_path):
    """Before: the quote swallowed 196 of 200 rows and ``skipped`` said 1."""
    rows = _helios_rows(200)
    rows[4] = rows[4].replace(",u4,", ',"u4,')
    p = tmp_path / "cluster_log.csv"
    p.write_text("\n".join([HEAD, *rows]) + "\n")
    with pytest.raises(InputError) as e:
        traces.read_helios(p)
    assert e.value.field == f"{p}:row 6.user" and "unterminated quote" in e.value.message
    tr = traces.read_helios(p, skip_bad=True)
    assert len(tr) == 4 and len(tr.skipped) == 196 and len(tr) + len(tr.skipped) == 200
    assert [r for r, _ in tr.skipped] == list(range(6, 202))


def test_a_field_over_the_csv_limit_is_a_named_row_error(tmp_path):
    rows = _helios_rows(3)
    rows[1] = rows[1].replace(",u1,", "," + "x" * 200_000 + ",")
    p = tmp_path / "cluster_log.csv"
    p.write_text("\n".join([HEAD, *rows]) + "\n")
    with pytest.raises(InputError, match=r"row 3"):
        traces.read_helios(p)
    assert len(traces.read_helios(p, skip_bad=True)) == 2


# --- the command line ------------------------------------------------------------------------------------------------

def test_trace_convert_seed_minus_one_is_a_named_option_error(tmp_path):
    """Before: exit 4 from numpy's default_rng(-1)."""
    code, _, err = _cli("trace", "convert", str(D / "helios_cluster_log.csv"), "-o", str(tmp_path / "w.csv"),
                        "--seed", "-1")
    assert code == 2 and "--seed" in err
    with pytest.raises(InputError, match=r"^seed=-1"):
        traces.generate(traces.read_helios(D / "helios_cluster_log.csv"), jobs=1, seed=-1)


def test_trace_convert_output_a_folder_is_a_named_error(tmp_path):
    """Before: IsADirectoryError (exit 4)."""
    code, _, err = _cli("trace", "convert", str(D / "helios_cluster_log.csv"), "-o", str(tmp_path), "--jobs", "1",
                        "--rule", "names", "--start-h", "0", "--window-h", "100000")
    assert code == 2 and "--output" in err and "is a folder" in err


def test_trace_stats_plot_with_an_unsupported_extension_is_a_named_error(tmp_path):
    """Before: matplotlib's ValueError (exit 4), after the statistics were printed."""
    pytest.importorskip("matplotlib")
    code, out, err = _cli("trace", "stats", str(D / "helios_cluster_log.csv"), "--plot", str(tmp_path / "fig.txt"))
    assert code == 2 and "--plot" in err and "'.txt'" in err and out == ""


def test_trace_stats_json_is_strict_json_in_the_envelope(tmp_path):
    """Before: a one-job trace printed ``NaN`` (its arrival rate) and no envelope."""
    p = tmp_path / "one.csv"
    p.write_text("\n".join([HEAD, *_helios_rows(1)]) + "\n")
    code, out, _ = _cli("trace", "stats", str(p), "--json")
    assert code == 0
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert doc["schema"] == "schedopt.cli.trace_stats" and doc["command"] == "trace stats"
    assert doc["version"] == 1 and doc["exit_code"] == 0
    assert doc["jobs"] == 1 and doc["arrival_rate_per_h"] is None
    from schedopt import schemas

    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator(schemas.load("cli")).validate(doc)
    code, out, _ = _cli("trace", "stats", str(tmp_path / "nope.csv"), "--json")
    assert code == 2 and json.loads(out)["schema"] == "schedopt.cli.error"


@pytest.mark.parametrize(("row", "field", "text"), [
    ({"gpus": "1e300"}, "gpu_num", "MAX_JOB_GPUS"),
    ({"duration": "1e300"}, "duration", "MAX_DURATION_S"),
    ({"submit": "1e300"}, "submit_time", "a date-time"),
    ({"user": "a\x00b"}, "user", "NUL byte"),
])
def test_values_past_their_bound_and_nul_bytes_are_named_row_errors(tmp_path, row, field, text):
    """Found by the fuzz (schedopt.testing.fuzz.inputs): a row asking for 1e300 GPUs or running 1e300 s was read as
    such, and a NUL byte was kept in a user name."""
    line = _helios_rows(2)[1]
    if "gpus" in row:
        line = line.replace(",vc1,1,", f",vc1,{row['gpus']},")
    elif "duration" in row:
        line = line.replace(",600,0", f",{row['duration']},0")
    elif "submit" in row:
        line = line.replace("COMPLETED,2020-06-09 18:41:01", f"COMPLETED,{row['submit']}")
    else:
        line = line.replace(",u1,", f",{row['user']},")
    p = tmp_path / "cluster_log.csv"
    p.write_text("\n".join([HEAD, _helios_rows(1)[0], line]) + "\n")
    with pytest.raises(InputError) as e:
        traces.read_helios(p)
    assert e.value.field == f"{p}:row 3.{field}" and text in e.value.message


def test_a_byte_order_mark_is_read_and_an_empty_file_is_named(tmp_path):
    """Found by the fuzz: a CSV saved with a UTF-8 byte-order mark lost its first column ('missing job_id'); an empty
    file read as a trace of no jobs."""
    p = tmp_path / "bom.csv"
    p.write_bytes(b"\xef\xbb\xbf" + ("\n".join([HEAD, *_helios_rows(2)]) + "\n").encode())
    assert len(traces.read_helios(p)) == 2
    e = tmp_path / "empty.csv"
    e.write_text("")
    with pytest.raises(InputError, match="is empty"):
        traces.read_helios(e)


def test_trace_convert_load_that_rounds_to_no_job_and_an_empty_cluster_are_named(tmp_path):
    """Found by the fuzz: --load 1e-300 wrote a workload of one job; --cluster '' ran with no cluster check."""
    src = str(D / "helios_cluster_log.csv")
    code, _, err = _cli("trace", "convert", src, "-o", str(tmp_path / "w.csv"), "--load", "1e-300")
    assert code == 2 and "rounds to none" in err
    code, _, err = _cli("trace", "stats", src, "--cluster", "")
    assert code == 2 and "--cluster" in err
    code, _, err = _cli("trace", "convert", src, "-o", str(tmp_path / "w.csv"), "--seed", str(2**32))
    assert code == 2 and "2**32" in err


def test_a_binary_file_under_json_is_an_error_document_without_lone_surrogates(tmp_path):
    """The error document shows undecodable bytes as bytes (``b'\\xff...'``): a JSON consumer in another language
    refuses lone surrogates such as ``\\udcff``."""
    p = tmp_path / "b.json"
    p.write_bytes(b"\xff\xfe[" + bytes(range(256)))
    code, out, _ = _cli("trace", "stats", str(p), "--json")
    doc = json.loads(out)
    assert code == 2 and doc["schema"] == "schedopt.cli.error"
    assert doc["error"]["value"].startswith("b'\\xff\\xfe[")
    out.encode("utf-8")  # no lone surrogate anywhere in the document
    assert "\\udc" not in out


def test_named_workload_knobs_are_checked_before_the_shipped_trace_is_read():
    """Found by the fuzz: ``pollux@0.0001/0`` read the shipped 82,247-row Philly trace before it found that the load
    gives no job (over 5 s on a loaded machine); ``pollux@1000000/0`` asked for 1.6e8 jobs the same way."""
    import time

    from schedopt import sim
    from schedopt.traces.named import shipped_trace

    shipped_trace.cache_clear()
    t0 = time.process_time()
    with pytest.raises(InputError, match="rounds to none"):
        sim.load_workload("pollux@0.0001/0")
    with pytest.raises(InputError, match=r"1\.6e\+08 jobs, more than MAX_JOBS"):
        sim.load_workload("pollux@1000000/0")
    assert time.process_time() - t0 < 0.3
    assert shipped_trace.cache_info().currsize == 0  # never read


def test_convert_names_the_generated_jobs_too_big_for_rigid_policies(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                                      ) -> None:
    """The rule's requests are checked against the cluster too (the trace's own counts were): Pollux's rule gives a
    few Philly jobs 32 GPUs, which no GPU type of sia-64 has (largest: 24 RTX 2080 Ti). The warning and the
    metadata name them, and they are exactly the jobs a rigid policy's simulation refuses."""
    from schedopt import sim

    src = Path(traces.__file__).parent / "data" / "philly.csv.gz"
    out = tmp_path / "mine.csv"
    assert main(["trace", "convert", str(src), "-o", str(out), "--jobs", "160", "--load", "1.5", "--cluster",
                 "sia-64", "--skip-bad"]) == 0
    err = capsys.readouterr().err
    meta = json.loads(Path(str(out) + ".meta.json").read_text())
    w = sim.load_workload(out)
    big = [j.name for j in w.jobs if j.num_replicas > 24]
    assert big and meta["too_big_for_rigid"] == big and meta["cluster"] == "sia-64"
    assert f"warning: {len(big)} generated jobs" in err and big[0] in err and "(largest 24)" in err
    first = next(k for k, j in enumerate(w.jobs) if j.name == big[0])
    with pytest.raises(InputError) as ei:
        sim.simulate(sim.cluster_preset("sia-64"), w, sim.get_policy("fifo"), job_model="pollux")
    assert ei.value.field == f"workload.jobs[{first}].num_replicas"
    # without --cluster nothing is checked or said
    assert main(["trace", "convert", str(src), "-o", str(out), "--jobs", "160", "--load", "1.5"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert "too_big_for_rigid" not in json.loads(Path(str(out) + ".meta.json").read_text())
