"""Build the docs site, serve it on this machine, and open it in headless Chromium.

Shared by docs/make_pdf.py and the browser tests (tests/conftest.py). The browser is Debian's
Chromium (apt-get install chromium), driven by Playwright's Python client: a browser that a tool
downloads cannot be fetched here.
"""

import contextlib
import functools
import http.server
import importlib.util
import os
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
