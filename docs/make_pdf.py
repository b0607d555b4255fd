"""Print the learner's path as one PDF, from the built site, with headless Chromium.

    pip install -e ".[docs]" && python docs/make_pdf.py [--out numpy-gpt.pdf]

It builds the site (mkdocs build --strict), serves it on 127.0.0.1, and in Debian's Chromium joins
the pages of the learner's path, in the order of mkdocs.yml's navigation, into one document
(docs/make_pdf.js): every display equation numbered, (1) to (N), and under each "Where is it used?"
the numbers of the equations it covers. Chromium prints that document, A4, with page numbers.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import site_tools

sys.path.insert(0, str(site_tools.REPO))
import config  # noqa: E402
from engineering.errors import InputError, run_script  # noqa: E402

ASSEMBLE = Path(__file__).with_name("make_pdf.js")
PATH_SECTION = "The learner's path"  # the navigation's section that the PDF prints, after the pages above it
TITLE = "numpy-gpt, equation by equation: the learner's path"
PRINT_CSS = """
.pdf-book { font-size: 10pt; }
.pdf-title { margin-top: 40vh; text-align: center; }
.pdf-page { break-before: page; }
.pdf-equations { font-style: italic; }
.md-typeset pre > code { white-space: pre-wrap; word-break: break-all; }  /* code wraps rather than being cut */
.md-typeset table:not([class]) { display: table; font-size: 0.62rem; }
.md-typeset h2, .md-typeset h3 { break-after: avoid; }
.md-typeset tr { break-inside: avoid; }
mjx-container[display="true"] { break-inside: avoid; }
"""
FOOTER = ('<div style="font-size: 8px; width: 100%; text-align: center;">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')


def site_path(page):
    """A page of docs/ as its path in the site. Example: 'index.md' -> '', '01-embeddings.md' -> '01-embeddings/'"""
    return "" if page == "index.md" else page.removesuffix(".md") + "/"


def learners_path(nav):
    """The pages above the learner's path section and those in it, from mkdocs.yml's nav, in order.

    Example: [{'Start here': 'index.md'}, {"The learner's path": ['01-a.md']}, {'Engineering': [...]}]
    -> ['', '01-a/']
    """
    pages = []
    for entry in nav:
        title, value = next(iter(entry.items())) if isinstance(entry, dict) else (None, entry)
        if isinstance(value, str):
            pages.append(value)
        elif title == PATH_SECTION:
            pages += [next(iter(v.values())) if isinstance(v, dict) else v for v in value]
            return [site_path(page) for page in pages]
    raise InputError(f"mkdocs.yml's nav has no section '{PATH_SECTION}': the PDF prints that section")


def assemble(page, paths):
    """Join the site's pages (paths) in page, already open at the site, and typeset them: what was numbered.

    Returns {"equations": N, "whereUsed": [{"page", "equations": [numbers]}], "errors": [MathJax's]}."""
    site_tools.typeset(page)
    return page.evaluate(ASSEMBLE.read_text(encoding="utf-8"), {"paths": paths, "title": TITLE})


def print_pdf(page, out):
    page.add_style_tag(content=PRINT_CSS)
    page.pdf(path=str(out), format="A4", print_background=True, display_header_footer=True, header_template="<span></span>",
             footer_template=FOOTER, margin={"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"})


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="numpy-gpt.pdf", help="where to write the PDF (default: numpy-gpt.pdf)")
    args = p.parse_args(argv)
    if not Path(args.out).resolve().parent.is_dir():
        raise InputError(f"--out {args.out}: there is no folder {Path(args.out).parent} to write the PDF in")
    if problem := site_tools.missing_tool():
        raise InputError(f"the PDF needs the site and Chromium: {problem}")
    from mkdocs.config import load_config

    paths = learners_path(load_config(str(site_tools.REPO / "mkdocs.yml")).nav)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        if failure := site_tools.build(folder):
            raise SystemExit(f"mkdocs build --strict failed, so there is no site to print:\n{failure}")
        with site_tools.serve(folder) as origin, site_tools.chromium() as browser:
            page = browser.new_page()
            page.goto(f"{origin}/", wait_until="load")
            book = assemble(page, paths)
            if book["errors"]:
                raise SystemExit(f"MathJax could not typeset {len(book['errors'])} formulas: {book['errors'][:3]}")
            print_pdf(page, Path(args.out))
    print(f"wrote {args.out}: {len(paths)} pages of the site, {book['equations']} numbered equations, "
          f"{len(book['whereUsed'])} 'Where is it used?' naming theirs, in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    run_script(main)
