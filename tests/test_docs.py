"""The docs stay true: every citation points at the code it quotes, every worked example computes.

Conventions the pages follow (docs/engineering/docs-checks.md says the same for writers):
- A citation names code as pytest names a test, never by line number: `path.py::name`, the name
  that of a def, a class, a method (`runs.py::Run.save_progress`) or a module-level assigned name
  (`transformer.py::GELU_SCALE`) of that file, found with ast. So a learner's edit that keeps the
  math (a comment, a print, a breakpoint()) moves nothing the docs say.
- In a table row, every other `code span` of the row must appear in the named object's source,
  whitespace squashed. A citation on a line of its own, followed by a ```python block: the block's
  lines must stand in the object's source in that order, other lines allowed between them (each
  line compared with its trailing whitespace stripped, its indentation kept). In running text, the
  line must name what it cites: one of its code spans before the citation (and after the previous
  one) appears in the object's source, or is the object's name; a line with no code span there names
  what it points at by the citation itself.
- A worked example is a line `Example: tests/test_file.py::test_name`, followed by a table whose
  columns are Step | Code | Value. A row whose Code is a plain new name defines it from its
  Value (a Python literal), and the test file must hold that literal, so the page's inputs are the
  test's. Every other row's Code is run with NumPy (as np) and the project's functions in scope
  (statements separated by `;`, the last one an expression) and must equal its Value: to 1e-9, or
  to the last digit shown where the Value starts with ≈.
- A citation in running text right after a `name` or `name()` of a function (a def of the project)
  must name that function: `forward` (transformer.py::forward) is right; `forward`
  (train.py::evaluate), a call inside another function, is not.
- Figures from a trained model sit in docs/figures.json, written by docs/make_figures.py; a page
  quotes them as `figure:name`, and the value beside it must match; or, where a learner reads it
  without its key, as <span data-figure="name">value</span>, which must match too.
"""

import ast
import importlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

# docs/site_tools.py (conftest.py puts docs/ on the path): the resolver the site's hook uses too
import builtins

from site_tools import (CITATION, CODE_SPAN, CitationError, block_lines, cited_lines, cited_object, fenced_block,
                        in_code, marked_gaps, named_objects, squash, text_before)

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PAGES = sorted(DOCS.rglob("*.md"))  # the learner's path, docs/*.md, and the engineering shelf, docs/engineering/*.md
PAGE_IDS = [page.relative_to(DOCS).as_posix() for page in PAGES]
BY_LINE = re.compile(r"\b[\w/]+\.py:\d+(?:-\d+)?\b")  # the old citation by line number, which an edit above it moves
EXAMPLE = re.compile(r"^Example: (tests/\w+\.py)::(\w+)\s*$")
REWRITE = ("a citation names its code (path.py::name); if the code it quotes changed, "
           "rewrite the page's quote, or cite the object that now holds it")
PROJECT_MODULES = ("transformer", "train", "tokenizer", "generate", "gradcheck", "engineering.checkpoint")


def citations(page):
    """(line number on the page, the CITATION match, the page's line, the lines after it) for each citation."""
    lines = page.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        for match in CITATION.finditer(line):
            yield number, match, line, lines[number:]


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_every_citation_quotes_its_lines(page):
    wrong, checked = [], 0
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        wrong += [f"{page.relative_to(DOCS)}:{number} cites {old[0]} by line number: name what it cites, "
                  f"{old[0].split(':')[0]}::name" for old in BY_LINE.finditer(line)]
    for number, match, line, after in citations(page):
        try:
            cited_lines(line, match, after)
        except CitationError as problem:
            wrong.append(f"{page.relative_to(DOCS)}:{number} cites {match[0]}: {problem}")
        checked += 1
    assert not wrong, f"{REWRITE}:\n" + "\n".join(wrong)
    assert checked or page.name == "index.md", f"{page.name} cites no code"


def quoted_blocks(page):
    """(line number on the page, path, name, the block's lines) for each citation alone on its line before a
    ```python block: the excerpts a page quotes."""
    for number, match, line, after in citations(page):
        if squash(CITATION.sub("", line)).strip("*`#: ") == "":
            block = fenced_block(after)
            if block is not None:
                yield number, match[1], match[2], block


def definitions(node):
    """{name: [(line, whether a use on that same line sees it)]} of every name an object binds: assignments,
    loop and with targets, imports, nested defs, the arguments of nested functions and lambdas, and the
    targets of comprehensions and := (which a use on their own line reads)."""
    found = {}

    def add(name, line, same_line=False):
        found.setdefault(name, []).append((line, same_line))

    comprehension_targets = {id(n) for c in ast.walk(node) if isinstance(c, ast.comprehension)
                             for n in ast.walk(c.target)}
    walrus_targets = {id(w.target) for w in ast.walk(node) if isinstance(w, ast.NamedExpr)}
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
            add(inner.id, inner.lineno, id(inner) in comprehension_targets | walrus_targets)
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and inner is not node:
            add(inner.name, inner.lineno)
        elif isinstance(inner, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)) and inner is not node:
            for arg in ast.walk(inner.args):
                if isinstance(arg, ast.arg):
                    add(arg.arg, arg.lineno, True)
        elif isinstance(inner, (ast.Import, ast.ImportFrom)):
            for alias in inner.names:
                add((alias.asname or alias.name).split(".")[0], inner.lineno)
        elif isinstance(inner, ast.ExceptHandler) and inner.name:
            add(inner.name, inner.lineno)
    return found


def unexplained_names(path, name, block):
    """The names a quoted block uses whose value it neither shows nor marks as left out: for each use on a
    shown line, the nearest binding before it (in the cited object) must be on a shown line, or inside lines the
    block marks with `...`. The object's own arguments, the file's module-level names and Python's builtins are
    given. Example: `dx_mid += dout` quoted alone from block_backward -> ['dx_mid']"""
    first, def_line, lines = cited_object(path, name)
    numbers = block_lines(block, first, lines)
    if numbers is None:
        return []  # not a quote of the object: test_every_citation_quotes_its_lines names it
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    node = next(n for n in ast.walk(tree) if getattr(n, "lineno", None) == def_line and isinstance(
        n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)))
    given = set(dir(builtins)) | set(named_objects(path))
    given |= {alias.asname or alias.name.split(".")[0] for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
              for alias in n.names}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        given |= {arg.arg for arg in ast.walk(node.args) if isinstance(arg, ast.arg)}
    bound, shown, marks = definitions(node), set(numbers), marked_gaps(block, numbers)

    def marked(line):
        """Whether a hidden line lies in a stretch the block marks with `...`."""
        return max([n for n in numbers if n < line], default=0) in marks

    wrong = []
    updated = [n.target for n in ast.walk(node) if isinstance(n, ast.AugAssign)  # x += 1 reads x too
                and isinstance(n.target, ast.Name)]
    for use in [n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)] + updated:
        if use.lineno not in shown:
            continue
        earlier = [line for line, same in bound.get(use.id, []) if line < use.lineno or (same and line == use.lineno)]
        if not earlier:
            continue  # an argument, a global or a builtin (given), or bound only later in a loop
        nearest = max(earlier)
        if nearest not in shown and not marked(nearest) and use.id not in wrong:
            wrong.append(use.id)
    return wrong


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_every_quoted_block_shows_or_marks_where_its_names_come_from(page):
    wrong = []
    for number, path, name, block in quoted_blocks(page):
        try:
            unexplained = unexplained_names(path, name, block)
        except CitationError:
            continue  # test_every_citation_quotes_its_lines names it
        if unexplained:
            wrong.append(f"{page.relative_to(DOCS)}:{number} quotes {path}::{name} using "
                         f"{', '.join(unexplained)}, whose value it neither shows nor marks as left out")
    assert not wrong, ("show the line that gives each name its value, or put a `...` line where the block "
                       "leaves it out:\n" + "\n".join(wrong))


def test_a_quoted_block_that_uses_a_name_it_leaves_out_is_caught():
    # the start page's old excerpt of block_backward: mlp_cache and dx_mid get their values in lines it left out
    block = ["    dh2, grads = mlp_backward(dout, mlp_cache)", "    dx_mid += dout"]
    assert sorted(unexplained_names("transformer.py", "block_backward", block)) == ["dx_mid", "mlp_cache"]
    marked = ["    ...", "    dh2, grads = mlp_backward(dout, mlp_cache)", "    ...", "    dx_mid += dout"]
    assert unexplained_names("transformer.py", "block_backward", marked) == []
    shown = ["    ln1_cache, attn_cache, ln2_cache, mlp_cache = cache", "    dh2, grads = mlp_backward(dout, mlp_cache)",
             "    dx_mid, grads[\"ln2_gain\"], grads[\"ln2_shift\"] = layernorm_backward(dh2, ln2_cache)",
             "    dx_mid += dout"]
    assert unexplained_names("transformer.py", "block_backward", shown) == []


def test_a_mark_of_lines_left_out_must_stand_where_lines_are_left_out():
    citation = "transformer.py::block_backward"
    match = CITATION.search(citation)
    fence = ["```python", "    dh2, grads = mlp_backward(dout, mlp_cache)", "    ...",
             '    dx_mid, grads["ln2_gain"], grads["ln2_shift"] = layernorm_backward(dh2, ln2_cache)', "```"]
    with pytest.raises(CitationError, match="is `...`, but no line of block_backward is left out there"):
        cited_lines(citation, match, fence)  # the two lines stand next to each other in block_backward
    fence[3] = "    dx_mid += dout"
    first, last = cited_lines(citation, match, fence)  # the layer norm's line between them, left out and marked
    assert last - first == 2


def paragraphs(page):
    """(line number on the page, text) of each paragraph of a page outside code blocks, its lines joined."""
    found, lines, start, in_fence = [], [], 0, False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines() + [""], 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        if in_fence or line.lstrip().startswith("```") or not line.strip():
            if lines:
                found.append((start, " ".join(lines)))
            lines = []
            continue
        start = start if lines else number
        lines.append(line.strip())
    return found


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_no_paragraph_is_said_twice_in_a_row(page):
    said = paragraphs(page)
    twice = [f"{page.relative_to(DOCS)}:{number}: {text[:60]}" for (_, before), (number, text) in zip(said, said[1:])
             if before.endswith(text) and not text.startswith(("|", "<"))]
    assert not twice, "a paragraph that repeats the end of the one before it:\n" + "\n".join(twice)


# a word that starts in lower case and has a capital after it, outside code: a heading lower-cased whole
# into a fold's title ("Reference for gELU", "adamW"), not a name a learner meets
LOWERED = re.compile(r"\b[a-z]+[A-Z]\w*")


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_a_folds_title_keeps_its_names_capitals(page):
    titles = re.findall(r"<summary>(.*?)</summary>", page.read_text(encoding="utf-8"))
    wrong = [title for title in titles if LOWERED.search(CODE_SPAN.sub("", title))]
    assert not wrong, f"{page.name}: {wrong}"


# The course's pages, in the reading order: their symbols share one notation, docs/notation.md
COURSE = [DOCS / "index.md", *sorted(DOCS.glob("[01][0-9]-*.md")), DOCS / "exercises.md"]
NOTATION = DOCS / "notation.md"
# a layer's own names, which each layer's page defines for itself: its input, output, weights and bias
LOCAL = {"x", "y", "W", "b", "dx", "dy", "dW", "db"}
MATH_SPAN = re.compile(r"\$([^$]+)\$")
SYMBOL_TABLE = "| Symbol | Meaning | In code | Shape |"  # the header of every "What does each symbol mean?" table
# the one letter kept with two meanings, each universal: V, the vocabulary's size (and in a shape always that),
# and V, attention's values beside Q and K; the notation page says so in both rows
TWO_MEANINGS = {"$V$": {"`cfg.vocab_size`", "`v_rows`"}}


def symbol_rows(page):
    """(symbol, In code) of each row of a page's symbol tables (those headed SYMBOL_TABLE). A cell of math alone,
    such as "$Q, K, V$" or "$W_o$, $b_o$", names one symbol per comma, each paired with its own code span when
    the In code cell has as many; a cell with words beside its math ("$x$, flattened") is one symbol whole."""
    lines = page.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        if squash(line) != SYMBOL_TABLE:
            continue
        for row in lines[number + 2:]:
            if not row.startswith("|"):
                break
            cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
            symbol, code = cells[0], cells[2]
            if MATH_SPAN.sub("", symbol).strip(" ,"):
                yield symbol, code
                continue
            symbols = [part.strip() for span in MATH_SPAN.findall(symbol) for part in top_level_commas(span)]
            codes = CODE_SPAN.findall(code)
            pairs = zip(symbols, [f"`{c}`" for c in codes]) if len(codes) == len(symbols) > 1 else \
                ((s, code) for s in symbols)
            yield from (("$" + s + "$", c) for s, c in pairs)


def top_level_commas(tex):
    """TeX split at the commas outside braces and brackets. Example: 'dQ, dK, W_{a,b}, (a, b)' -> ['dQ', 'dK',
    'W_{a,b}', '(a, b)']"""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(tex):
        depth += {"{": 1, "}": -1, "(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(tex[start:i])
            start = i + 1
    return [part for part in parts + [tex[start:]] if part.strip() and part.strip() != r"\ldots"]


def symbols_by_page(pages):
    """{symbol: {In code: [pages]}} over the pages' symbol tables."""
    found = {}
    for page in pages:
        for symbol, code in symbol_rows(page):
            found.setdefault(symbol, {}).setdefault(code, []).append(page.name)
    return found


def test_a_symbol_has_one_meaning_in_code_across_the_course():
    found = symbols_by_page(COURSE + [NOTATION])
    clashes = {symbol: codes for symbol, codes in found.items()
               if len(codes) > 1 and symbol.strip("$") not in LOCAL and set(codes) != TWO_MEANINGS.get(symbol)}
    assert not clashes, ("one symbol, one meaning: give each symbol the notation page's In code, or another "
                         "symbol:\n" + "\n".join(f"{s}: {c}" for s, c in clashes.items()))


def test_every_symbol_two_pages_use_is_on_the_notation_page():
    on_pages = symbols_by_page(COURSE)
    noted = symbols_by_page([NOTATION])
    shared = sorted(symbol for symbol, codes in on_pages.items() if len({p for ps in codes.values() for p in ps}) > 1
                    and symbol not in noted and symbol.strip("$") not in LOCAL)
    assert not shared, f"symbols used on two pages and missing from docs/notation.md: {shared}"
    assert len(noted) > 30, "the notation page's table is read"


def test_the_symbol_tables_are_read_as_the_notation_test_reads_them(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("### What does each symbol mean?\n\n| Symbol | Meaning | In code | Shape |\n| --- | --- | --- | --- |\n"
                    "| $Q, K$ | queries, keys | `q`, `k` | (T, C) |\n| $x$, flattened | rows | `x.reshape(-1)` | (N,) |\n"
                    "| $W_o$, $b_o$ | output | `p[\"Wo\"]` | (C, C) |\n\nText.\n", encoding="utf-8")
    assert list(symbol_rows(page)) == [("$Q$", "`q`"), ("$K$", "`k`"), ("$x$, flattened", "`x.reshape(-1)`"),
                                       ("$W_o$", '`p["Wo"]`'), ("$b_o$", '`p["Wo"]`')]


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


def named_function(line, citation, names):
    """The function a running-text citation follows: the last code span before it (and after the
    previous citation), when that span is `name` or `name()` of a def; else None."""
    spans = CODE_SPAN.findall(text_before(line, citation))
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
            if in_code(line, match):
                continue  # a citation inside a code span is code, not a pointer
            name = named_function(line, match, project_functions)
            if name is not None and match[2].split(".")[-1] != name:
                wrong.append(f"{page.relative_to(DOCS)}:{number}: `{name}` ({match[0]}) points at {match[2]}, "
                             f"not at {name}")
    assert not wrong, "a citation right after a function's name must name that function:\n" + "\n".join(wrong)


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
    modules = {name: importlib.import_module(name) for name in PROJECT_MODULES}
    project = {"np": np, **{name.rsplit(".", 1)[-1]: module for name, module in modules.items()}}
    for module in modules.values():
        project.update({k: v for k, v in vars(module).items() if not k.startswith("_")})
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
# a figure shown without its key, for a learner: <span data-figure="name">value</span>
FIGURE_SPAN = re.compile(r'<span data-figure="([^"]+)">([^<]*)</span>')


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_model_figures_match_figures_json(page):
    figures_file = DOCS / "figures.json"
    text = page.read_text(encoding="utf-8")
    quoted = FIGURE.findall(text)
    spans = FIGURE_SPAN.findall(CODE_SPAN.sub("", text))  # a span written as code shows the markup, quotes nothing
    if not quoted and not spans:
        return
    assert len(quoted) == text.count("`figure:"), f"{page.name} mentions a figure outside a `figure:name` | `value` row"
    assert len(spans) == CODE_SPAN.sub("", text).count("data-figure="), f"{page.name}: a malformed data-figure span"
    quoted += spans
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
