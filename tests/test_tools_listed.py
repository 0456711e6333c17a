"""Every script in ``tools/`` is listed in CONTRIBUTING.md with what it writes or measures, and every listed script
exists (issue 40 item 5): a script nobody can find the purpose of, or a row about a deleted script, fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def listed() -> dict[str, str]:
    """``tools/NAME`` -> its description, from the table rows of CONTRIBUTING.md's section on ``tools/``."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("## The scripts in `tools/`", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        m = re.match(r"^\| `(tools/[^`]+)` \| (.*) \|$", line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} is listed twice"
            rows[m.group(1)] = m.group(2).strip()
    return rows


def on_disk() -> set[str]:
    return {f"tools/{p.name}" for p in (ROOT / "tools").iterdir() if p.is_file() and not p.name.startswith(".")}


def test_every_tool_is_listed_with_what_it_produces_and_every_row_is_a_tool() -> None:
    rows = listed()
    assert not on_disk() - set(rows), f"not in CONTRIBUTING.md: {sorted(on_disk() - set(rows))}"
    assert not set(rows) - on_disk(), f"listed but not in tools/: {sorted(set(rows) - on_disk())}"
    short = [name for name, what in rows.items() if len(what.split()) < 5]
    assert not short, f"say what these write or measure: {short}"
    count = re.search(r"(\d+) scripts:", (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    assert count is not None and int(count.group(1)) == len(rows)


def test_every_record_a_listed_script_names_is_in_benchmarks() -> None:
    """A row of the records table names its files (``name.csv``, ``name*.csv``, ``name.*``): each matches a file."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    table = text.split("### Benchmarks that write a record", 1)[1].split("\n### ", 1)[0]
    rows = "\n".join(line for line in table.splitlines() if line.startswith("| `tools/"))
    names = set(re.findall(r"`([a-z0-9_*]+\.(?:csv|md|\*))`", rows))
    assert len(names) > 20
    missing = [n for n in sorted(names) if not list((ROOT / "benchmarks").glob(n))]
    assert not missing, f"named in CONTRIBUTING.md, no such record in benchmarks/: {missing}"
