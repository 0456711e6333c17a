"""The formulation cards stay tied to the code.

Each problem's own tests build its models and compare the block and family names with the card's `## Names`
section (tests/test_sia.py, test_synergy.py, test_heterps.py, test_hived*.py, test_gandiva_io.py). Here: every
card has that section, every listed name is used in the card's mathematics too, and a test reads each card.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CARDS = ["sia", "synergy", "heterps", "hived", "gandiva", "sim", "sim_hived", "gavel", "fairness", "traces", "pollux", "shockwave"]
NAME = re.compile(r"^- `([A-Za-z_][A-Za-z0-9_]*)`", flags=re.M)


def names_and_body(problem: str) -> tuple[list[str], str]:
    text = (ROOT / "formulations" / f"{problem}.md").read_text()
    assert "## Names" in text, f"{problem}.md has no '## Names' section"
    head, rest = text.split("## Names", 1)
    section, _, tail = rest.partition("\n## ")
    return NAME.findall(section), head + tail


@pytest.mark.parametrize("problem", CARDS)
def test_card_lists_names_used_in_its_mathematics(problem):
    names, body = names_and_body(problem)
    assert names, f"{problem}.md lists no names"
    assert len(names) == len(set(names)), f"{problem}.md lists a name twice"
    missing = [n for n in names if not re.search(rf"\b{re.escape(n)}\b", body)]
    assert not missing, f"{problem}.md names {missing} in '## Names' but never in its formulation"


@pytest.mark.parametrize("problem", CARDS)
def test_some_test_compares_the_card_with_built_models(problem):
    readers = [
        p.name
        for p in (ROOT / "tests").glob("test_*.py")
        if p.name != "test_formulations.py" and f"{problem}.md" in p.read_text() and "## Names" in p.read_text()
    ]
    assert readers, f"no test compares formulations/{problem}.md with the models the code builds"


def test_every_problem_and_the_core_have_a_card():
    for card in [*CARDS, "core", "goodput", "mckp"]:
        assert (ROOT / "formulations" / f"{card}.md").exists(), card
