"""MkDocs hooks that make docs/ a site a learner can read offline.

- Every citation `file.py::name` in a page becomes a link to the lines it points at, found now, at
  build (docs/site_tools.py's cited_lines, which tests/test_docs.py checks the pages with): its text
  `file.py:N` or `file.py:N-M`, its title the object's name, its target line N of a rendered copy of
  that file (`source/file.py/#LN`), a page this hook writes with one anchor per line. The Markdown
  in docs/ stays as it is, so a learner's edit that moves code moves the links with it.
- MathJax is served from the files of the django-static-mathjax package (MathJax 3), copied into
  the site, so formulas render with no network.
- The navigation's "Engineering" shelf is every page of docs/engineering/, in the order below.
- The headings inside a folded <details> block (the reference under each section) stay out of the
  table of contents; their anchors stay on the page, so links to them keep landing.
- Every picture of docs/figures/ is shown at least wide enough for its smallest label to be
  READABLE_PX on screen, in a frame that scrolls sideways where the column is narrower.
"""

import html
import logging
import math
import posixpath
import re
import sys
from pathlib import Path

import mathjax  # the django-static-mathjax package: MathJax 3's files under its static/ folder
from mkdocs.structure.files import File, InclusionLevel
from pygments.lexers import PythonLexer
from pygments.token import STANDARD_TYPES

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # docs/, for site_tools
from site_tools import CITATION, CitationError, cited_lines, in_code  # noqa: E402  the resolver of tests/test_docs.py

log = logging.getLogger("mkdocs.hooks.site")

EXAMPLE = re.compile(r"^Example: tests/\w+\.py::\w+\s*$")  # a worked example's header: a pytest node id, left as it is
FENCE = re.compile(r"^\s*(```|~~~)")
SOURCE_DIR = "source"  # the rendered copies live at source/<path of the file>/
MATHJAX_DIR = "javascripts/mathjax"
SHELF = "engineering"
SHELF_ORDER = ["processes.md", "runs.md", "tokenizer-files.md", "performance.md"]  # others follow by name
DETAILS = re.compile(r"<details\b.*?</details>", re.S)
HEADING_ID = re.compile(r"<h[1-6][^>]*\bid=\"([^\"]+)\"")
FIGURE = re.compile(r'(?:<a href="[^"]*\.svg"[^>]*>)?<img [^>]*\bsrc="[^"]*\bfigures/([\w.-]+\.svg)"[^>]*>(?:</a>)?')
SVG_SIZE = re.compile(r'<svg [^>]*\bwidth="([\d.]+)pt"[^>]*\bviewBox="0 0 ([\d.]+) ')
FONT_SIZE = re.compile(r"font-size: ?([\d.]+)px")
READABLE_PX = 10  # the smallest label a learner reads without zooming


def repo_root(config):
    return Path(config.config_file_path).resolve().parent


def cited_files(docs_dir):
    """The paths cited by any page under docs_dir. Example: 'see transformer.py::forward' -> {'transformer.py'}"""
    return {m[1] for page in Path(docs_dir).rglob("*.md") for m in CITATION.finditer(page.read_text(encoding="utf-8"))}


def on_config(config):
    shelf = sorted(Path(config.docs_dir, SHELF).glob("*.md"),
                   key=lambda p: (SHELF_ORDER.index(p.name) if p.name in SHELF_ORDER else len(SHELF_ORDER), p.name))
    if shelf:
        config.nav = [*config.nav, {"Engineering": [f"{SHELF}/{p.name}" for p in shelf]}]
    return config


def highlighted_lines(code):
    """Python source as one HTML string per line, Pygments classes on each token, so a line stands alone.

    Example: 'x = 1\\n' -> ['<span class="n">x</span><span class="w"> </span><span class="o">=</span>...']
    """
    lines = [[]]
    for kind, text in PythonLexer(stripnl=False, ensurenl=False).get_tokens(code):
        while kind not in STANDARD_TYPES:
            kind = kind.parent
        css = STANDARD_TYPES[kind]
        for i, piece in enumerate(text.split("\n")):
            if i:
                lines.append([])
            if piece:
                lines[-1].append(f'<span class="{css}">{html.escape(piece)}</span>' if css else html.escape(piece))
    if lines and not lines[-1]:
        lines.pop()  # the file's last newline ends its last line; it does not start another
    return ["".join(parts) for parts in lines]


def source_page(path, code):
    """A Markdown page showing one source file, each line an anchor #LN that CSS highlights when targeted."""
    rows = "".join(f'<span class="source-line" id="L{n}"><a class="source-lineno" href="#L{n}">{n}</a>{line}\n</span>'
                   for n, line in enumerate(highlighted_lines(code), 1))
    return (f"---\nsearch:\n  exclude: true\nhide:\n  - navigation\n  - toc\n---\n\n# {path}\n\n"
            f'<div class="highlight source-file"><pre><code>{rows}</code></pre></div>\n')


def on_files(files, config):
    root = repo_root(config)
    for path in sorted(cited_files(config.docs_dir)):
        source = root / path
        if not source.is_file():
            log.warning(f"a page cites {path}, which is not a file of the repository")
            continue
        content = source_page(path, source.read_text(encoding="utf-8"))
        files.append(File.generated(config, f"{SOURCE_DIR}/{path}.md", content=content,
                                    inclusion=InclusionLevel.NOT_IN_NAV))
    mathjax = mathjax_folder()
    # tex-chtml.js and the components it loads on demand (fonts, TeX packages, menu, accessibility),
    # not the other ready-made bundles beside it (SVG output, MathML input, node): 14 of MathJax's 24 MB
    for asset in sorted(p for p in mathjax.rglob("*") if p.is_file() and (p.parent != mathjax or p.name == "tex-chtml.js")):
        files.append(File.generated(config, f"{MATHJAX_DIR}/{asset.relative_to(mathjax).as_posix()}",
                                    abs_src_path=str(asset)))
    return files


def on_serve(server, config, builder):
    """Under `mkdocs serve`, an edit to a cited file rebuilds its rendered copy too."""
    root = repo_root(config)
    for path in sorted(cited_files(config.docs_dir)):
        if (root / path).is_file():
            server.watch(str(root / path))
    return server


def mathjax_folder():
    """MathJax 3's browser build (es5/) as the django-static-mathjax package installs it."""
    return Path(mathjax.__file__).resolve().parent / "static" / "mathjax" / "es5"


def link_citations(line, after, page_uri):
    """Each citation of a page's line (not in a code span) as a Markdown link to the lines it points at, as
    site_tools.cited_lines finds them now; `after` is the page's lines after this one (a quoted block's).
    A citation that does not resolve stays text, and is a warning: `mkdocs build --strict` fails on it.

    Example: 'see `dx = dout @ W.T` (transformer.py::linear_backward)' on index.md -> 'see `dx = dout @ W.T`
    ([transformer.py:163](source/transformer.py.md#L163 "linear_backward in transformer.py"){.citation})'
    A range N-M adds ?lines=N-M, which docs/javascripts/source-lines.js reads to light every line of it.
    """
    if EXAMPLE.match(line):
        return line
    out, done = [], 0
    for match in CITATION.finditer(line):
        if in_code(line, match):
            continue  # a citation inside a code span is code, not a pointer
        try:
            first, last = cited_lines(line, match, after)
        except CitationError as problem:
            log.warning(f"{page_uri}: the citation {match[0]} does not resolve: {problem}")
            continue
        path, name = match[1], match[2]
        target = posixpath.relpath(f"{SOURCE_DIR}/{path}.md", posixpath.dirname(page_uri) or ".")
        lines = f"-{last}" if last > first else ""
        query = f"?lines={first}-{last}" if last > first else ""
        out += [line[done: match.start()],
                f'[{path}:{first}{lines}]({target}{query}#L{first} "{name} in {path}"){{.citation}}']
        done = match.end()
    return "".join(out) + line[done:]


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri.startswith(f"{SOURCE_DIR}/"):
        return markdown
    lines, fence = markdown.split("\n"), None
    for number, line in enumerate(lines):
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening[1]
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None and CITATION.search(line):
            lines[number] = link_citations(line, lines[number + 1:], page.file.src_uri)
    return "\n".join(lines)


def folded_ids(page_html):
    """The ids of the headings inside <details> blocks. Example: '<details><h3 id="a">' -> {'a'}"""
    return {m[1] for block in DETAILS.findall(page_html) for m in HEADING_ID.finditer(block)}


def unfolded(entries, hidden):
    """The table of contents without the entries in hidden; a hidden entry's children go with it."""
    kept = [entry for entry in entries if entry.id not in hidden]
    for entry in kept:
        entry.children = unfolded(entry.children, hidden)
    return kept


def readable_width(svg):
    """How an SVG of matplotlib's is drawn so that its smallest label is READABLE_PX on screen, as CSS:
    its natural size (pt, 4/3 px each) where the column has room, and never narrower than the width
    at which that label reads. Example: viewBox width 748.8, smallest font 7 -> max(min(100%, 998.4px), 1070px)"""
    size = SVG_SIZE.search(svg)
    natural, units = float(size[1]) * 4 / 3, float(size[2])
    smallest = min(float(f) for f in FONT_SIZE.findall(svg))
    readable = math.ceil(units * READABLE_PX / smallest)  # whole pixels, rounded up, so no label falls under
    return f"width: max(min(100%, {natural:.1f}px), {readable}px); max-width: none"


def framed_figures(page_html, figures_dir):
    """Each picture of figures_dir (with the link around it) in a frame that scrolls sideways, sized by readable_width."""
    def frame(match):
        svg = Path(figures_dir, match[1])
        if not svg.is_file():
            return match[0]
        sized = re.sub(r"<img ", f'<img style="{readable_width(svg.read_text(encoding="utf-8"))}" ', match[0], count=1)
        return f'<span class="figure-frame">{sized}</span>'

    return FIGURE.sub(frame, page_html)


def on_page_content(page_html, page, config, files):
    hidden = folded_ids(page_html)
    if hidden and page.toc:
        page.toc.items = unfolded(page.toc.items, hidden)
    return framed_figures(page_html, Path(config.docs_dir, "figures"))
