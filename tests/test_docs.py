"""The docs stay true: every citation points at the code it quotes, every worked example computes.

Conventions the pages follow (docs/index.md says the same for writers):
- A citation is `file.py:N` or `file.py:N-M`. In a table row, every other `code span` of the row
  must appear in the cited lines. A citation on a line of its own, followed by a ```python block,
  must match those lines exactly. In running text, the line must name what it cites: one of its
  code spans (a symbol, or a short quoted fragment) must appear in the cited lines.
- A worked example is a line `Example: tests/test_file.py::test_name`, followed by a table whose
  columns are Step | Code | Value. A row whose Code is a plain new name defines it from its
  Value (a Python literal), and the test file must hold that literal, so the page's inputs are the
  test's. Every other row's Code is run with NumPy (as np) and the project's functions in scope
  (statements separated by `;`, the last one an expression) and must equal its Value: to 1e-9, or
  to the last digit shown where the Value starts with ≈.
- A citation in running text right after a `name` or `name()` of a function (a def of the project)
  must land inside that function: the cited lines lie within its def in the cited file, or hold its
  def line. `forward` (transformer.py:387) is right; `forward` (train.py:215), a call, is not.
- Figures from a trained model sit in docs/figures.json, written by docs/make_figures.py; a page
  quotes them as `figure:name`, and the value beside it must match.
"""

import ast
import importlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PAGES = sorted(DOCS.rglob("*.md"))  # the learner's path, docs/*.md, and the engineering shelf, docs/engineering/*.md
PAGE_IDS = [page.relative_to(DOCS).as_posix() for page in PAGES]
CITATION = re.compile(r"\b([\w/]+\.py):(\d+)(?:-(\d+))?\b")
CODE_SPAN = re.compile(r"`([^`]+)`")
EXAMPLE = re.compile(r"^Example: (tests/\w+\.py)::(\w+)\s*$")
RESYNC = ("if the cited code only moved, `python docs/sync_docs.py` moves the citation; "
          "if it changed, rewrite the page's quote (sync_docs lists those)")
PROJECT_MODULES = ("transformer", "train", "tokenizer", "generate", "gradcheck", "engineering.checkpoint")


def squash(text):
    return re.sub(r"\s+", " ", text).strip()


def cited_lines(path, first, last):
    lines = (REPO / path).read_text(encoding="utf-8").splitlines()
    assert 1 <= first <= last <= len(lines), f"{path}:{first}-{last} is outside the file ({len(lines)} lines)"
    return lines[first - 1: last]


def citations(page):
    """(line number on the page, file, first, last, the page's line, the lines after it) for each citation."""
    lines = page.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        for match in CITATION.finditer(line):
            first = int(match[2])
            yield number, match[1], first, int(match[3] or first), line, lines[number:]


def quoted_spans(line):
    """The code spans of a page's line, other than citations and figure names."""
    return [s for s in CODE_SPAN.findall(line) if not CITATION.search(s) and not s.startswith("figure:")]


def fenced_block(after):
    """The lines of a ```python block that starts on the first non-blank line of `after`, or None."""
    rest = [line for line in after]
    while rest and not rest[0].strip():
        rest.pop(0)
    if not rest or not rest[0].startswith("```python"):
        return None
    return rest[1: rest.index("```", 1)]


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_every_citation_quotes_its_lines(page):
    checked = 0
    for number, path, first, last, line, after in citations(page):
        where = f"{page.name}:{number} cites {path}:{first}-{last}"
        code = cited_lines(path, first, last)
        block = fenced_block(after) if squash(CODE_SPAN.sub("", CITATION.sub("", line))).strip("*`#: ") == "" else None
        if block is not None:
            assert block == code, f"{where}: the code block differs from those lines; {RESYNC}"
        elif line.lstrip().startswith("|"):
            for span in quoted_spans(line):
                assert squash(span) in squash(" ".join(code)), f"{where}: `{span}` is not in those lines; {RESYNC}"
        else:  # running text names what it points at, and the cited lines must hold it
            named = [span for span in quoted_spans(line) if squash(span) in squash(" ".join(code))]
            assert named, (f"{where}: running text must name what it cites, as a `symbol` or `quoted fragment` "
                           f"found in those lines; {RESYNC}")
        checked += 1
    assert checked or page.name == "index.md", f"{page.name} cites no code"


def function_names():
    """The name of every def in the project's Python files, the tests' and the docs' included."""
    names = set()
    for path in REPO.rglob("*.py"):
        if any(part.startswith(".") or part in ("site", "node_modules") or "venv" in part for part in path.relative_to(REPO).parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        names.update(node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return names


def defs_of(path, name):
    """(first line, last line) of every def of name in a repository file."""
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    return [(node.lineno, node.end_lineno) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name]


def named_function(line, citation_start, names):
    """The function a running-text citation follows: the last code span before it (and after the
    previous citation), when that span is `name` or `name()` of a def; else None."""
    before = CITATION.split(line[:citation_start])[-1] if CITATION.search(line[:citation_start]) else line[:citation_start]
    spans = CODE_SPAN.findall(before)
    if not spans:
        return None
    name = spans[-1].removesuffix("()")
    return name if name.isidentifier() and name in names else None


@pytest.fixture(scope="module")
def project_functions():
    return function_names()


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_a_citation_after_a_function_name_lands_inside_that_function(page, project_functions):
    wrong = []
    in_fence = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        if in_fence or line.lstrip().startswith("|"):
            continue
        for match in CITATION.finditer(line):
            if any(s.start() < match.start() < s.end() for s in CODE_SPAN.finditer(line)):
                continue  # a citation inside a code span is code, not a pointer
            name = named_function(line, match.start(), project_functions)
            if name is None:
                continue
            first, last = int(match[2]), int(match[3] or match[2])
            spans = defs_of(match[1], name)
            if not any(start <= first and last <= end or first <= start <= last for start, end in spans):
                where = f"in {match[1]} at lines {', '.join(f'{s}-{e}' for s, e in spans)}" if spans else f"nowhere in {match[1]}"
                wrong.append(f"{page.name}:{number}: `{name}` ({match[0]}), but `{name}` is {where}")
    assert not wrong, "a citation must point inside the function it follows:\n" + "\n".join(wrong)


def literal(text):
    """A Python literal from a page, lists and dicts of numbers turned into arrays."""
    value = ast.literal_eval(text)
    if isinstance(value, dict):
        return {k: np.array(v) if isinstance(v, list) else v for k, v in value.items()}
    return np.array(value) if isinstance(value, list) else value


def examples(page):
    """(test file, test name, [(code, value)]) for each worked-example table of a page."""
    lines = page.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        match = EXAMPLE.match(line)
        if not match:
            continue
        rows = []
        for row in lines[number + 1:]:
            if not row.strip() and not rows:
                continue
            if not row.lstrip().startswith("|"):
                break
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            code, value = (CODE_SPAN.fullmatch(c) for c in cells[1:3])
            if code and value:
                rows.append((code[1], value[1]))
        yield match[1], match[2], rows


def run(code, scope):
    """Run a page's code cell: statements separated by ';', the value of the last expression."""
    *statements, last = ast.parse(code).body
    exec(compile(ast.Module(statements, type_ignores=[]), "<page>", "exec"), scope)  # noqa: S102 - the page's code
    return eval(compile(ast.Expression(last.value), "<page>", "eval"), scope)  # noqa: S307


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_worked_examples_compute_what_the_page_shows(page):
    project = {"np": np, **{name: importlib.import_module(name) for name in PROJECT_MODULES}}
    for module in PROJECT_MODULES:
        project.update({k: v for k, v in vars(project[module]).items() if not k.startswith("_")})
    for test_file, test_name, rows in examples(page):
        scope = dict(project)  # each example starts afresh
        source = (REPO / test_file).read_text(encoding="utf-8")
        assert f"def {test_name}(" in source, f"{page.name}: {test_file} has no {test_name}"
        assert rows, f"{page.name}: the example of {test_name} has no Code | Value rows"
        for code, value in rows:
            if code.isidentifier() and code not in scope:
                scope[code] = literal(value)
                assert squash(value) in squash(source), f"{page.name}: {test_file} has no {code} = {value}"
                continue
            actual = run(code, scope)
            rounded = value.startswith("≈")
            expected = literal(value.lstrip("≈ "))
            if np.asarray(expected).dtype.kind == "U":  # text, or a list of it: equal exactly
                assert np.array_equal(np.asarray(actual), expected), f"{page.name}: `{code}` gives {actual!r}, the page says {value}"
                continue
            tolerance = 0.5 * 10.0 ** -max([len(d) for d in re.findall(r"\.(\d+)", value)] or [0]) if rounded else 1e-9
            assert np.allclose(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float), rtol=0,
                               atol=tolerance), f"{page.name}: `{code}` gives {actual}, the page says {value}"


FIGURE = re.compile(r"`figure:([^`]+)`\s*\|\s*`([^`]+)`")


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_model_figures_match_figures_json(page):
    figures_file = DOCS / "figures.json"
    text = page.read_text(encoding="utf-8")
    quoted = FIGURE.findall(text)
    if not quoted:
        return
    assert len(quoted) == text.count("`figure:"), f"{page.name} mentions a figure outside a `figure:name` | `value` row"
    figures = json.loads(figures_file.read_text(encoding="utf-8"))["figures"]
    for name, shown in quoted:
        assert name in figures, f"{page.name} quotes figure:{name}, which docs/figures.json lacks"
        assert shown == figures[name], f"{page.name}: figure:{name} is {figures[name]}, the page shows {shown}"


def test_figures_json_records_its_provenance():
    figures_file = DOCS / "figures.json"
    if not figures_file.exists():
        pytest.skip("docs/figures.json has not been made yet (python docs/make_figures.py)")
    provenance = json.loads(figures_file.read_text(encoding="utf-8"))["provenance"]
    for key in ("commit", "model.npz sha256", "model.json sha256", "model.tok.json sha256", "corpus sha256",
                "settings", "versions"):
        assert provenance.get(key), key


def test_sync_docs_moves_citations_whose_code_only_moved():
    import sys
    sys.path.insert(0, str(DOCS))
    import sync_docs
    source = (REPO / "transformer.py").read_text(encoding="utf-8").splitlines()
    line_of = lambda text: next(n for n, line in enumerate(source, 1) if text in line)
    embed, dx, ln = line_of("def embed_forward"), line_of("dx = dout @ W.T"), line_of("def layernorm_forward")
    page = ["Running text names `def embed_forward` (transformer.py:1).",
            "| dx | computes it | transformer.py:2 | `dx = dout @ W.T` |",
            "transformer.py:3-4", "```python", source[ln - 1], source[ln], "```",
            "A quote that stands nowhere: `no such code` (transformer.py:5)."]
    moved, unplaced = sync_docs.relocate(list(page))
    assert moved[0] == f"Running text names `def embed_forward` (transformer.py:{embed})."
    assert moved[1] == f"| dx | computes it | transformer.py:{dx} | `dx = dout @ W.T` |"
    assert moved[2] == f"transformer.py:{ln}-{ln + 1}"
    assert unplaced == ["line 8: transformer.py:5 (the quoted code changed)"]
