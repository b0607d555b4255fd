"""Build the docs site, serve it on this machine, and open it in headless Chromium; and find the lines a
page's citation points at.

Shared by docs/make_pdf.py and the browser tests (tests/conftest.py). The browser is Debian's
Chromium (apt-get install chromium), driven by Playwright's Python client: a browser that a tool
downloads cannot be fetched here. The citations' resolver (cited_lines) is shared by the site's hook
(docs/hooks/site.py), which links each citation to those lines, and tests/test_docs.py, which checks them.
"""

import ast
import contextlib
import functools
import http.server
import importlib.util
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


def build(folder):
    """`mkdocs build --strict` into folder: None when it passes, else what mkdocs said."""
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(folder),
                            "--config-file", str(REPO / "mkdocs.yml")], capture_output=True, text=True, cwd=REPO,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})  # Material's notice about MkDocs 2
    return None if built.returncode == 0 else built.stdout + built.stderr


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def copyfile(self, source, outputfile):
        try:
            super().copyfile(source, outputfile)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser left the page before this file arrived


@contextlib.contextmanager
def serve(folder):
    """Serve folder on 127.0.0.1 at a free port, in a thread. Example: with serve(f) as origin: origin == 'http://127.0.0.1:40123'"""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=folder))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def missing_tool():
    """What is missing to build the site and drive Chromium, as a sentence with its fix; None when nothing is."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        return 'mkdocs or mkdocs-material is not installed (pip install -e ".[docs]")'
    if importlib.util.find_spec("playwright") is None:
        return 'Playwright is not installed (pip install -e ".[docs]")'
    if not Path(CHROMIUM).is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


@contextlib.contextmanager
def chromium():
    """Debian's Chromium, headless, through Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def typeset(page):
    """Wait until MathJax has typeset the page it loaded (every page of the site loads it)."""
    page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")


# A citation names code as pytest names a test: path.py::name, the name that of a def, a class, a method
# (Class.method) or a module-level assigned name of that file. Example: transformer.py::layernorm_backward
CITATION = re.compile(r"\b([\w/]+\.py)::(\w+(?:\.\w+)*)")
CODE_SPAN = re.compile(r"`([^`]+)`")


class CitationError(Exception):
    """A citation that names nothing in its file, or whose page quotes code that the named object does not hold."""


def squash(text):
    return re.sub(r"\s+", " ", text).strip()


def named_objects(path):
    """{name: (first line, def line, last line)} of every def, class, method and module-level assigned name of a
    repository file, found with ast. Its first line is its def line, or its first decorator's, or that of the
    comment right above them (no blank line between: what it says of the object, such as a measured gain).
    Example: 'files.py' -> {'temporary_name': (11, 11, 13), ..., 'write_atomically': (31, 31, 34)}"""
    return objects_in((REPO / path).read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=64)
def objects_in(source):
    lines, found = source.splitlines(), {}

    def add(node, name, first):
        while first > 1 and lines[first - 2].lstrip().startswith("#"):
            first -= 1
        found.setdefault(name, (first, node.lineno, node.end_lineno))

    def add_all(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                add(node, prefix + node.name, min([node.lineno] + [d.lineno for d in node.decorator_list]))
                if isinstance(node, ast.ClassDef):
                    add_all(node.body, f"{prefix}{node.name}.")
            elif not prefix and isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in target.elts if isinstance(target, ast.Tuple) else [target]:
                        if isinstance(name, ast.Name):
                            add(node, name.id, node.lineno)

    add_all(ast.parse(source).body, "")
    return found


def cited_object(path, name):
    """(first line, def line, its lines from the first): the object a citation names, or CitationError."""
    if not (REPO / path).is_file():
        raise CitationError(f"{path} is not a file of the repository")
    objects = named_objects(path)
    if name not in objects:
        raise CitationError(f"{path} defines no {name} (a def, a class, a method or a module-level assignment)")
    first, def_line, last = objects[name]
    return first, def_line, (REPO / path).read_text(encoding="utf-8").splitlines()[first - 1: last]


def fenced_block(after):
    """The lines of a ```python block that starts on the first non-blank line of `after`, or None."""
    rest = list(after)
    while rest and not rest[0].strip():
        rest.pop(0)
    if not rest or not rest[0].startswith("```python"):
        return None
    return rest[1: rest.index("```", 1)]


def quoted_spans(text):
    """The code spans of a page's text, other than citations and figure names."""
    return [s for s in CODE_SPAN.findall(text) if not CITATION.search(s) and not s.startswith("figure:")]


def in_code(line, match):
    """Whether a citation stands inside a code span of its line: code, such as a pytest node id, not a pointer."""
    return any(span.start() < match.start() < span.end() for span in CODE_SPAN.finditer(line))


def text_before(line, match):
    """A page's line from the end of the previous citation outside code spans to the start of this one."""
    previous = [m.end() for m in CITATION.finditer(line, 0, match.start()) if not in_code(line, m)]
    return line[previous[-1] if previous else 0: match.start()]


LEFT_OUT = "..."  # a quoted block's line that stands for lines of the object it leaves out


def left_out(line):
    """Whether a quoted block's line is the mark of lines left out: `...` alone, indented or not."""
    return line.strip() == LEFT_OUT


def block_lines(block, first, lines):
    """The line numbers at which the block's lines stand in lines (numbered from first), in order, other lines
    allowed between them, the `...` lines (which stand for lines left out) not counted; None when they do not.
    Lines compare with trailing whitespace stripped."""
    numbers, start = [], 0
    for wanted in (line for line in block if not left_out(line)):
        start = next((i for i in range(start, len(lines)) if lines[i].rstrip() == wanted.rstrip()), None)
        if start is None:
            return None
        numbers.append(first + start)
        start += 1
    return numbers


def marked_gaps(block, numbers):
    """The lines after which a quoted block marks lines left out (`...`), by the number of the shown line just
    before the mark (0 for a mark before the first). Example: ['...', 'a', 'b', '...', 'c'] at [5, 6, 9] -> {0, 6}"""
    marks, shown = set(), 0
    for line in block:
        if left_out(line):
            marks.add(numbers[shown - 1] if shown else 0)
        else:
            shown += 1
    return marks


def false_marks(block, numbers, def_line, last):
    """The index in block of a `...` that stands where no line is left out, or None. Before the first shown line
    lines are left out when it is not the def line; after the last, when it is not the object's last line."""
    shown = 0
    for index, line in enumerate(block):
        if not left_out(line):
            shown += 1
            continue
        before = numbers[shown - 1] if shown else def_line - 1
        after = numbers[shown] if shown < len(numbers) else last + 1
        if after - before < 2:
            return index
    return None


def span_lines(span, first, lines, near=None):
    """(first, last) of the fewest lines (numbered from first) that hold span, whitespace squashed: where several
    such windows do, the one nearest the line `near` (else the first); None where none does."""
    wanted = squash(span)
    if wanted not in squash(" ".join(lines)):
        return None
    for length in range(1, len(lines) + 1):
        starts = [start for start in range(len(lines) - length + 1)
                  if wanted in squash(" ".join(lines[start: start + length]))]
        if starts:
            start = min(starts, key=lambda start: abs(first + start - near)) if near else starts[0]
            return first + start, first + start + length - 1


def cited_lines(line, match, after):
    """The lines (first, last) of its file that a citation points at: `match` is a CITATION match in a page's
    `line`, and `after` the page's lines after it. CitationError when the page quotes what is not there.
    - Alone on its line before a ```python block: the lines the block's lines stand at, in order; a `...` line
      of the block stands for lines left out, and there must be some where it stands.
    - In a table row: the lines holding the row's other code spans, each of which must be in the object.
    - Inside a code span (code, such as a pytest node id): the whole def; it must only resolve.
    - In running text: the lines holding the code spans before it (after the previous citation) that the
      object holds; if none do, one of them must be the object's name (`name` or `name()`). With no such
      span, or only its name: the whole def, from its def line (decorators left out) to its last line.
    Example: '`dx = dout @ W.T` (transformer.py::linear_backward)' -> (163, 163), that line of linear_backward"""
    path, name = match[1], match[2]
    first, def_line, lines = cited_object(path, name)
    whole = (def_line, first + len(lines) - 1)
    if in_code(line, match):
        return whole
    alone = squash(CODE_SPAN.sub("", CITATION.sub("", line))).strip("*`#: ") == ""
    block = fenced_block(after) if alone else None
    if block is not None:
        numbers = block_lines(block, first, lines)
        if numbers is None:
            lost = next(n for n in range(len(block)) if block_lines(block[: n + 1], first, lines) is None)
            raise CitationError(f"the code block's line {lost + 1}, `{block[lost].strip()}`, is not in {name}, "
                                f"in the block's order")
        false = false_marks(block, numbers, def_line, first + len(lines) - 1)
        if false is not None:
            raise CitationError(f"the code block's line {false + 1} is `...`, but no line of {name} is left out there")
        return numbers[0], numbers[-1]
    table = line.lstrip().startswith("|")
    spans = quoted_spans(line if table else text_before(line, match))
    longest = span_lines(max(spans, key=len), first, lines) if spans else None  # the others' nearest to it
    found = {span: span_lines(span, first, lines, longest and longest[0]) for span in spans}
    if table:
        missing = [span for span, where in found.items() if where is None]
        if missing:
            raise CitationError(f"`{missing[0]}` is not in {name}")
        held = list(found.values())
    else:
        short = name.split(".")[-1]
        names = {name, f"{name}()", short, f"{short}()"}
        held = [where for span, where in found.items() if where and span not in names]
        if spans and not held and not names & set(spans):
            raise CitationError(f"running text must name what it cites: none of "
                                f"{', '.join(f'`{span}`' for span in spans)} is in {name}, or is its name")
    return (min(f for f, _ in held), max(last for _, last in held)) if held else whole
