"""Issue 41: the command line's silent choices are named: an empty --cluster, an unknown --backend (also for
policies that solve no model), a policy spec's unknown backend (exit 3 with the closest name, as solve), -o a file
(said first, nothing else claimed), an unknown cluster (every preset listed, the closest named), every problem in
generate --help, and where a user's policy raised (--verbose)."""

from __future__ import annotations

import pytest

from schedopt.cli import build_parser, main
from schedopt.problem import problems


def _code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_empty_cluster_is_named(capsys) -> None:
    assert _code(["simulate", "--cluster", "", "--policy", "fifo"]) == 2
    assert "--cluster" in capsys.readouterr().err


@pytest.mark.parametrize("policy", ["fifo", "tiresias", "sia"])
def test_unknown_backend_is_named_for_every_policy(capsys, policy: str) -> None:
    assert _code(["simulate", "--backend", "nope", "--policy", policy]) == 3
    assert "--backend" in capsys.readouterr().err


def test_a_known_backend_no_policy_takes_is_said(caplog, tmp_path) -> None:
    assert _code(["simulate", "--backend", "highs", "--policy", "fifo", "--workload", "saturn/1", "--progress",
                  "off", "--json", "--round-seconds", "86400"]) == 0
    assert any("--backend highs changes nothing" in r.getMessage() for r in caplog.records)


def test_a_specs_unknown_backend_exits_3_like_solve(capsys) -> None:
    assert _code(["simulate", "--policy", "sia:backend=higs"]) == 3
    err = capsys.readouterr().err
    assert "did you mean highs" in err and "--policy sia:backend=higs" in err
    assert _code(["solve", "--backend", "higs", "example:heterps_unreachable.json"]) == 3
    assert "did you mean highs" in capsys.readouterr().err


def test_output_that_is_a_file_is_said_first(tmp_path, capsys) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    assert _code(["simulate", "--policy", "fifo", "-o", str(f)]) == 2
    err = capsys.readouterr().err
    assert "is a file" in err and "records are in" not in err


@pytest.mark.parametrize("name, close", [("sia64", "'sia-64'"), ("polux", "'pollux'"), ("nosuch", None)])
def test_unknown_cluster_lists_every_preset(capsys, name: str, close: str | None) -> None:
    assert _code(["simulate", "--policy", "fifo", "--cluster", name]) == 2
    err = capsys.readouterr().err
    for preset in ("'pollux'", "'sia-64'", "'sia-gpt'", "sia-<multiple of 64>"):
        assert preset in err
    assert ("did you mean " + close in err) if close else ("did you mean" not in err and "gandiva-100" in err)


def test_generate_help_lists_every_problem() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    text = sub.choices["generate"].format_help()  # type: ignore[union-attr]
    names = sorted(problems())
    assert len(names) >= 7
    for n in names:
        assert n in text


def test_generate_seed_is_bounded(tmp_path, capsys) -> None:
    for problem in ("gavel", "pollux"):  # numpy's ValueError (exit 4) before
        assert _code(["generate", problem, "--seed", "-1", "-o", str(tmp_path / "x.json")]) == 2
        assert "--seed" in capsys.readouterr().err


BOOM = '''
from schedopt.sim import Decision


class Boom:
    name = "boom"

    def decide(self, state):
        if state.round_index > 0:
            raise ValueError("the user's bug")
        return Decision(allocation={})
'''


def test_a_users_policy_that_raises_shows_where_with_verbose(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "boom_policy_41.py").write_text(BOOM)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert _code(["simulate", "--policy", "boom_policy_41:Boom", "--progress", "off", "--verbose"]) == 1
    err = capsys.readouterr().err
    assert "the user's bug" in err
    assert f"raised at {tmp_path / 'boom_policy_41.py'}:10 in decide" in err


def test_simulate_many_refuses_an_empty_cluster() -> None:
    from schedopt.errors import InputError
    from schedopt.sim import simulate_many

    for bad in ("", "  ", 64):
        with pytest.raises(InputError, match="cluster"):
            simulate_many(["fifo"], ["saturn/1"], cluster=bad, workers=1, progress=False)  # type: ignore[arg-type]


def test_seeds_past_2_32_are_refused(capsys) -> None:
    assert _code(["simulate", "--policy", "fifo", "--seeds", "4294967296"]) == 2  # accepted before (the fuzz)
    assert "--seeds" in capsys.readouterr().err
