"""The code blocks of the user guides, in reading order, and a runner that does what a reader does with them.

Used by ``tests/test_guides.py`` and, by hand, to walk a guide in a fresh virtual environment::

    python tests/guide_blocks.py optimization [--run-shell] [--workdir DIR]

A guide is its page and, for the platform guide, the pages its toctree includes by glob (``docs/platform/*``,
``docs/scale/*``), in the order Sphinx shows them. A ``python`` block runs in one namespace per page (as a reader
pasting into one interpreter), from the working folder; an untagged block (or ``text``) right after it is the
output the page shows, compared line by line with whitespace collapsed. ``bash`` / ``console`` blocks are shell
commands (``$ `` prompts dropped, ``\\`` continuations joined, comments dropped).
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: the three guides of issue 40 and the pages each takes a reader through
GUIDES: dict[str, tuple[str, ...]] = {
    "optimization": ("guides/optimization.md",),
    "systems": ("guides/systems.md",),
    "platform": ("guides/platform.md", "platform/*", "scale/*"),
}


@dataclass
class Block:
    """One fenced block of a page: its language tag, its text, the output block shown after it (if any)."""

    page: str
    line: int
    lang: str
    text: str
    output: str | None = None
    commands: list[str] = field(default_factory=list)
    end: int = 0


def pages(guide: str) -> list[Path]:
    """The guide's pages in reading order (a glob's pages sorted by name, as Sphinx's ``:glob:`` toctree)."""
    out: list[Path] = []
    for pattern in GUIDES[guide]:
        out.extend(sorted(DOCS.glob(pattern + ("" if pattern.endswith(".md") else ".md"))))
    return out


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` (MyST directives such as ``{toctree}`` left out)."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(`{3,})(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2), i
        i += 1
        body = []
        while i < len(lines) and lines[i].rstrip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        if lang.startswith("{"):
            continue
        text = "\n".join(body) + "\n"
        last = found[-1] if found else None
        if lang in ("", "text") and last is not None and last.lang == "python" and last.output is None \
                and not any(x.strip() for x in lines[last.end:start]):
            last.output = text  # the output shown right after the code
            last.end = i
            continue
        b = Block(str(page.relative_to(ROOT)), start + 1, lang, text, end=i)
        if lang in ("bash", "console", "sh") or (lang in ("", "text") and _looks_like_commands(body)):
            b.lang = "shell"
            b.commands = commands(body, prompts=lang in ("console", "text") or any(x.startswith("$ ") for x in body))
        found.append(b)
    return found


def _looks_like_commands(body: list[str]) -> bool:
    first = next((x for x in body if x.strip()), "")
    return bool(re.match(r"^(\$ )?(schedopt|python|pip|PYTHONPATH=\S+ schedopt|curl|TOKEN=)\b", first))


def commands(body: list[str], prompts: bool = False) -> list[str]:
    """The shell commands of a block: continuation lines joined, comments and (with ``prompts``) output dropped."""
    out: list[str] = []
    pending = ""
    for raw in body:
        line = raw.rstrip()
        if prompts and not pending:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if pending:
            line = pending + " " + line.strip()
            pending = ""
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        line = _strip_comment(line).strip()
        if line:
            out.append(line)
    return out


def _strip_comment(line: str) -> str:
    """The line without a trailing ``# comment`` outside quotes."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] == " "):
            return line[:i]
    return line


def normalized(text: str) -> list[str]:
    """Lines with runs of whitespace collapsed, blank lines dropped: what a reader compares by eye."""
    return [" ".join(x.split()) for x in text.splitlines() if x.strip()]


def run_python(block: Block, namespace: dict[str, object]) -> str:
    """Run a python block in ``namespace``; return what it printed (an expression's value is not echoed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(block.text, f"{block.page}:{block.line}", "exec"), namespace)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    """Walk a guide from the command line (the hand walk of ``docs/reference/walkthrough.md``)."""
    import argparse
    import os
    import subprocess
    import time

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("guide", choices=sorted(GUIDES))
    ap.add_argument("--run-shell", action="store_true", help="also run the shell commands (all of them: pip installs and hours-long runs too)")
    ap.add_argument("--workdir", default=".")
    ap.add_argument("--only", default="", help="run only the pages whose path contains this")
    a = ap.parse_args(argv)
    os.chdir(a.workdir)
    failures = 0
    for page in pages(a.guide):
        if a.only and a.only not in str(page):
            continue
        ns: dict[str, object] = {"__name__": "__main__"}
        for b in blocks(page):
            where = f"{b.page}:{b.line}"
            if b.lang == "python":
                t = time.process_time()
                try:
                    got = run_python(b, ns)
                except Exception as e:
                    failures += 1
                    print(f"FAIL {where}: {type(e).__name__}: {e}")
                    continue
                dt = time.process_time() - t
                if b.output is not None and normalized(got) != normalized(b.output):
                    failures += 1
                    print(f"DIFF {where} ({dt:.1f} s CPU)\n--- shown\n{b.output}--- got\n{got}")
                else:
                    print(f"ok   {where} ({dt:.1f} s CPU)" + ("\n     " + got.strip().replace("\n", "\n     ")
                                                             if got.strip() and b.output is None else ""))
            elif b.lang == "shell":
                for cmd in b.commands:
                    if not a.run_shell:
                        print(f"cmd  {where}: {cmd}")
                        continue
                    print(f"RUN  {where}: {cmd}", flush=True)
                    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
                    tail = (r.stdout[-600:] + r.stderr[-1500:]).strip()
                    print(f"     exit {r.returncode}\n     " + tail.replace("\n", "\n     "), flush=True)
                    failures += r.returncode not in (0,)
            else:
                print(f"--   {where}: a {b.lang or 'plain'} block (not run)")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
