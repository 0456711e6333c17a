"""Every example in README.md, formulations/*.md and the guides (docs/*.md, docs/guides/*.md) that shows an output is
run, and its output compared.

The convention (also in the README's "Contributing" section):

* A fenced ```` ```python ```` block followed directly (blank lines allowed) by a bare ```` ``` ```` block is an
  example with its output: the code runs in a fresh namespace, from a temporary folder (so files must come from the
  package, e.g. ``schedopt.examples.path("hived.yaml")``, not from the repository), and what it prints must equal the
  output block (trailing spaces ignored).
* A ``python`` block that ends with an expression followed by ``# ...`` comment lines shows that expression's
  ``repr``: it is run and the repr compared with the comment text.
* A line ``<!-- example: no-run -->`` just above a block's opening fence exempts it (say why next to it: network,
  minutes of work, a machine-dependent timing). Any other block whose language is not ``python`` and that is
  followed by an output block fails the test: make it Python, or mark it.

Blocks that show no output (bash lines, sketches) are not run. Sections other helpers add are picked up the same
way, wherever they sit in the file.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "formulations").glob("*.md")), *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "docs" / "guides").glob("*.md"))]
NO_RUN = "<!-- example: no-run -->"
FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass(frozen=True)
class Example:
    doc: str
    line: int
    lang: str
    code: str
    output: str | None  #: the output block that follows, if any
    no_run: bool

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks(text: str, doc: str) -> list[Example]:
    """The fenced blocks of ``text``, each with the bare block that directly follows it (its output), if any."""
    lines = text.splitlines()
    raw: list[tuple[int, str, str, bool, int]] = []  # (line, lang, body, no_run, closing fence's index)
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        prev = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        raw.append((start + 1, lang, "\n".join(lines[start + 1 : j]) + "\n", prev.strip() == NO_RUN, j))
        i = j + 1
    out: list[Example] = []
    k = 0
    while k < len(raw):
        line, lang, body, no_run, close = raw[k]
        output = None
        if lang and k + 1 < len(raw) and raw[k + 1][1] == "":
            nxt = raw[k + 1][0] - 1  # the output block's opening fence (index)
            if all(not s.strip() for s in lines[close + 1 : nxt]):
                output = raw[k + 1][2]
                k += 1
        out.append(Example(doc, line, lang, body, output, no_run))
        k += 1
    return out


def _trailing_repr(code: str) -> tuple[str, str] | None:
    """(code without the comment, expected repr) when the block ends with an expression and ``# ...`` lines."""
    lines = code.rstrip("\n").splitlines()
    n = len(lines)
    while n and lines[n - 1].startswith("# "):
        n -= 1
    if n == len(lines) or not n:
        return None
    body = "\n".join(lines[:n]) + "\n"
    tree = ast.parse(body)
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return None
    return body, "\n".join(s[2:] for s in lines[n:])


def examples() -> list[Example]:
    out = []
    for p in DOCS:
        out.extend(b for b in blocks(p.read_text(), p.relative_to(ROOT).as_posix())
                   if b.lang == "python" or b.output is not None)
    return out


def _norm(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def _run(code: str) -> tuple[str, object]:
    """Run ``code`` in a fresh namespace; (stdout, the value of a final expression or None)."""
    tree = ast.parse(code)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    ns: dict[str, object] = {"__name__": "__main__"}  # as a script a reader runs
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(tree, "<example>", "exec"), ns)
        value = eval(compile(ast.Expression(last.value), "<example>", "eval"), ns) if last is not None else None
    return buf.getvalue(), value


SHOWN = [e for e in examples() if e.output is not None or (e.lang == "python" and _trailing_repr(e.code))]


@pytest.mark.parametrize("ex", SHOWN, ids=[e.id for e in SHOWN])
def test_the_shown_output_is_what_the_example_prints(ex: Example, tmp_path: Path) -> None:
    if ex.no_run:
        pytest.skip(f"{ex.id} is marked {NO_RUN}")
    assert ex.lang == "python", (f"{ex.id}: a {ex.lang or 'bare'} block shows an output that no test checks: "
                                 f"write it in Python, or mark it {NO_RUN}")
    here = os.getcwd()
    os.chdir(tmp_path)  # not the repository: files must come from the installed package
    try:
        trailing = _trailing_repr(ex.code)
        if ex.output is not None:
            printed, _ = _run(ex.code)
            assert _norm(printed) == _norm(ex.output), f"{ex.id}: the shown output drifted"
        else:
            assert trailing is not None
            code, want = trailing
            _, value = _run(code)
            assert _norm(repr(value)) == _norm(want), f"{ex.id}: the shown value drifted"
    finally:
        os.chdir(here)


def test_the_collector_finds_the_readme_examples() -> None:
    """The README's example and the tour's snippets (Sia, goodput, Synergy, HeterPS, HiveD, Gandiva) are checked."""
    readme = [e for e in SHOWN if e.doc == "README.md"]
    assert readme and all(_trailing_repr(e.code) or e.output is not None for e in readme)
    tour = [e for e in SHOWN if e.doc == "docs/guides/tour.md"]
    assert len(tour) >= 6
    assert any("load_hived_config" in e.code for e in tour)


def test_the_convention_itself() -> None:
    text = "\n".join([
        "```python", "print(1)", "```", "", "```", "1", "```",          # an example with its output
        "```bash", "ls", "```",                                            # no output: not run
        NO_RUN, "```python", "print(2)", "```", "```", "3", "```",          # marked
        "```python", "x = 2", "x + 1", "# 3", "```",                        # a trailing repr
    ])
    got = blocks(text, "t.md")
    assert [(b.lang, b.output, b.no_run) for b in got] == [
        ("python", "1\n", False), ("bash", None, False), ("python", "3\n", True), ("python", None, False)]
    assert _trailing_repr(got[3].code) == ("x = 2\nx + 1\n", "3")
    assert _run("print('a')\n1 + 1\n") == ("a\n", 2)
