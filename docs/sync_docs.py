"""Bring the pages up to date after code moved or a model was retrained, then let the tests judge.

    python docs/sync_docs.py [PAGE.md ...]

Every page of docs/ and of docs/engineering/, or only the pages named, from docs/ or from the
repository (08-training.md, engineering/runs.md, docs/engineering/runs.md): a page someone else is
editing can be left out.

1. Each `figure:name` | `value` row takes its value from docs/figures.json.
2. Each citation `file.py:N-M` whose quoted code no longer stands at those lines moves to where
   that code now stands (the nearest such place, if there are several), in the same file or, where
   it moved to another of the project's modules, in that one. A citation whose code was changed is
   left alone and listed, for a person to rewrite.
Nothing here decides what is true: tests/test_docs.py still checks every citation and figure.
"""

import json
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path.insert(0, str(REPO / "tests"))
from test_docs import CITATION, CODE_SPAN, FIGURE, PAGES, fenced_block, quoted_spans, squash  # noqa: E402


def where_it_stands(file_lines, quoted, length, holds=all):
    """The first line numbers of every window of `length` lines that holds all the quoted text (or,
    with holds=any, some of it)."""
    squashed = [squash(line) for line in file_lines]
    return [start + 1 for start in range(len(file_lines) - length + 1)
            if holds(q in " ".join(squashed[start: start + length]) for q in quoted)]


def relocate(page_lines):
    """The page with each moved citation renumbered; and the citations that could not be placed."""
    unplaced = []
    for number, line in enumerate(page_lines):
        for match in reversed(list(CITATION.finditer(line))):
            path, first = match[1], int(match[2])
            last = int(match[3] or first)
            file_lines = (REPO / path).read_text(encoding="utf-8").splitlines()
            block = fenced_block(page_lines[number + 1:])
            holds = all  # a block and a table row quote all of what they show; running text names one thing
            if block is not None and squash(CITATION.sub("", line)).strip("*`#: ") == "":
                quoted, length = [squash(b) for b in block], len(block)
            elif line.lstrip().startswith("|"):
                quoted = [squash(s) for s in CODE_SPAN.findall(line)
                          if not CITATION.fullmatch(s) and not s.startswith("figure:")]
                length = last - first + 1
            else:
                quoted = [squash(s) for s in quoted_spans(line)]
                length, holds = last - first + 1, any
            still_there = " ".join(squash(x) for x in file_lines[first - 1: first - 1 + length])
            if not quoted or holds(q in still_there for q in quoted):
                continue
            starts = where_it_stands(file_lines, quoted, length, holds)
            if not starts:  # moved to another of the project's modules (train.py's corpus reading to corpus.py)
                path, starts = next(((other.name, found) for other in sorted(REPO.glob("*.py")) if other.name != path
                                     for found in [where_it_stands(other.read_text(encoding="utf-8").splitlines(),
                                                                   quoted, length, holds)] if found), (path, []))
            if not starts:
                unplaced.append(f"line {number + 1}: {match[0]} (the quoted code changed)")
                continue
            starts.sort(key=lambda start: abs(start - first))  # code moves a little, usually
            new = f"{path}:{starts[0]}" + (f"-{starts[0] + length - 1}" if length > 1 else "")
            line = line[: match.start()] + new + line[match.end():]
        page_lines[number] = line
    return page_lines, unplaced


def refresh_figures(text, figures):
    return FIGURE.sub(lambda m: f"`figure:{m[1]}` | `{figures.get(m[1], m[2])}`", text)


def page_named(name):
    """The page a name given on the command line means: relative to docs/, or to the repository."""
    parts = Path(name).parts
    return DOCS.joinpath(*(parts[1:] if parts[0] == "docs" else parts))


def main(names):
    figures = json.loads((DOCS / "figures.json").read_text(encoding="utf-8"))["figures"]
    pages = [page_named(name) for name in names] or PAGES
    missing = [name for name, page in zip(names, pages) if not page.is_file()]
    if missing:
        print(f"sync_docs.py: no page {', '.join(missing)} in docs/; name a page as 08-training.md or "
              f"engineering/runs.md", file=sys.stderr)
        sys.exit(2)
    for page in pages:
        text = refresh_figures(page.read_text(encoding="utf-8"), figures)
        lines, unplaced = relocate(text.split("\n"))
        new_text = "\n".join(lines)
        if new_text != page.read_text(encoding="utf-8"):
            page.write_text(new_text, encoding="utf-8")
            print(f"updated {page.relative_to(DOCS)}")
        for problem in unplaced:
            print(f"{page.relative_to(DOCS)} {problem}: rewrite it by hand")


if __name__ == "__main__":
    main(sys.argv[1:])
