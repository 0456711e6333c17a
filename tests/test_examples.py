"""Shipped example files: found through importlib.resources from any folder, named by the help texts, and the bad
instances `schedopt explain` is shown with in the README."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_cli import parsed, run

from schedopt import examples
from schedopt.errors import InputError


@pytest.mark.parametrize("name", examples.names())
def test_every_example_is_a_file_of_the_package(name: str) -> None:
    p = examples.path(name)
    assert p.is_file() and "schedopt" in p.parts
    assert examples.resolve(f"example:{name}") == str(p)


def test_an_unknown_example_is_named_with_the_known_ones() -> None:
    with pytest.raises(InputError, match="hived.yaml") as err:
        examples.path("bad.json")
    assert err.value.field == "example" and err.value.value == "bad.json"
    assert examples.resolve("plain/path.json") == "plain/path.json"


def test_the_help_names_schema_files_that_exist() -> None:
    text = run("--help").stdout
    where = re.search(r"\bin (\S+schemas)\b", text)
    assert where, text
    for name in ("cli.schema.json", "instance.schema.json"):
        assert name in text and (Path(where.group(1)) / name).is_file()
        json.loads((Path(where.group(1)) / name).read_text())


@pytest.mark.parametrize(("name", "says"), [
    ("heterps_unreachable.json", "out of reach"),
    ("hived_bad_node.json", "team-y"),
])
def test_explain_on_the_shipped_bad_instances(name: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # any folder: the file comes from the package
    r = run("explain", f"example:{name}", "--json")
    assert r.returncode == 1, r.stderr
    doc = parsed(r)
    assert doc["feasible"] is False and says in doc["explanation"] + json.dumps(doc["answer"])
    assert "example:heterps_unreachable.json" in run("explain", "--help").stdout


def test_solve_prints_its_timings_in_one_written_unit() -> None:
    """`solve` printed raw seconds (build=0.00289993, ...) where `demo` printed milliseconds: one unit, written."""
    from schedopt.cli_support import format_timings

    root = Path(__file__).resolve().parents[1]
    out = run("solve", str(root / "instances" / "heterps" / "nce.json")).stdout
    (line,) = [s for s in out.splitlines() if s.strip().startswith("timings:")]
    # the DP builds no model: no build phase (nan) is printed
    assert re.fullmatch(r"\s*timings: hand-off [\d.]+ ms, solve [\d.]+ ms, decode [\d.]+ ms", line), line
    assert format_timings({"build": 0.0029, "handoff": None, "solve": 0.3846}) == "build 2.9 ms, solve 384.6 ms"


def test_every_example_named_in_the_readme_and_the_help_exists() -> None:
    root = Path(__file__).resolve().parents[1]
    text = (root / "README.md").read_text() + run("--help").stdout + run("explain", "--help").stdout
    named = set(re.findall(r"example:([\w.-]+\w)", text)) - {"NAME"}
    assert named and named <= set(examples.names()), named - set(examples.names())
