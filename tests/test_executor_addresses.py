"""Issue 41: executor specs and addresses are checked before Dask or Ray see them (a named option error, exit 2;
never exit 4 from Dask's address parser, never 30 s of retries on a closed port)."""

from __future__ import annotations

import socket
import time

import pytest

from schedopt.cli import main
from schedopt.errors import InputError
from schedopt.executors import open_executor, spec_from_flags, validate_spec


@pytest.mark.parametrize("spec", ["dask://a:b:c", "dask://host:notaport", "tcp://h:0", "tcp://h:70000", "dask://h",
                                  "dask://:8786", "ray://h:x", "dask://[::1", "tcp://h:1/x"])
def test_bad_addresses_are_named(spec: str) -> None:
    with pytest.raises(InputError) as ei:
        validate_spec(spec)
    assert ei.value.field == "executor" and ei.value.value == spec


@pytest.mark.parametrize("spec", ["dask://[::1]:8786", "tcp://10.0.0.1:8786", "ray://h", "ray://h:10001"])
def test_good_addresses_pass(spec: str) -> None:
    validate_spec(spec)


def test_dask_flag_is_named() -> None:
    with pytest.raises(InputError) as ei:
        spec_from_flags(None, "host:notaport")
    assert ei.value.field == "--dask" and ei.value.value == "host:notaport"
    with pytest.raises(InputError) as ei:
        spec_from_flags("dask://a:b:c")
    assert ei.value.field == "--executor"


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return int(port)


def test_closed_port_is_named_at_once() -> None:
    pytest.importorskip("distributed")
    port = _closed_port()
    t0 = time.monotonic()
    with pytest.raises(InputError, match="no Dask scheduler answers"), open_executor(f"dask://127.0.0.1:{port}"):
        pass
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize("argv", [
    ["simulate", "--executor", "dask://a:b:c", "--policy", "fifo"],
    ["simulate", "--dask", "host:notaport", "--policy", "fifo"],
    ["bench", "--dask", "host:notaport", "--problem", "heterps"],
    ["reproduce", "sia", "-o", "{tmp}/r", "--dask", "host:notaport"],
    ["reproduce", "sia", "-o", "{tmp}/r", "--executor", "dask://a:b:c"],
])
def test_commands_name_the_flag(argv: list[str], tmp_path, capsys) -> None:
    code = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "--dask" in err or "--executor" in err
    assert "Traceback" not in err


def test_reproduce_closed_dask_port_is_quick(tmp_path, capsys) -> None:
    pytest.importorskip("distributed")
    t0 = time.monotonic()
    code = main(["reproduce", "sia", "-o", str(tmp_path / "r"), "--quick", "--dask", f"127.0.0.1:{_closed_port()}"])
    err = capsys.readouterr().err
    assert code == 2 and "no Dask scheduler answers" in err, err
    assert time.monotonic() - t0 < 5
