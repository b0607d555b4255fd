"""What the browser tests of the site read from each page, in one visit per page and width.

Loading a page and typesetting its formulas is most of what tests/test_site.py and tests/test_widgets.py
cost, so `read_site` opens each page once, in one tab, at 1280 px, reads it, then narrows the tab to
400 px and reads it again, and keeps what any test reads: the `site_pages` fixture of conftest.py. Each
READ_* below is a function run in the page; what it returns is kept under its name.
"""

# console errors and requests that leave the site are recorded by the tab's listeners, per page
WIDGETS_SETTLED = """() => [...document.querySelectorAll("div.widget")]
    .every(w => w.dataset.ready === "true" || w.dataset.ready === "missing")"""

READ_MATH = """() => [...document.querySelectorAll(".arithmatex")].map(e => ({
    tex: e.textContent.slice(0, 80),
    typeset: e.querySelector("mjx-container") !== null,
    error: e.querySelector("mjx-merror") !== null,
}))"""

# the article's text without code and formulas: where TeX left untypeset would show
READ_TEXT = """() => {
    const body = document.querySelector("article") || document.body;
    const copy = body.cloneNode(true);
    copy.querySelectorAll("pre, code, script, style, mjx-container").forEach(e => e.remove());
    return copy.textContent;
}"""

READ_IMAGES = """async () => Promise.all([...document.images].map(async img => {
    img.loading = "eager";
    try { await img.decode(); } catch (error) {}
    return {src: img.getAttribute("src"), width: img.naturalWidth};
}))"""

READ_LINKS = "() => [...document.querySelectorAll('a[href]')].map(a => a.href)"

READ_SOURCE_LINES = """() => [...document.querySelectorAll(".source-line")].map(e => {
    const copy = e.cloneNode(true);
    copy.querySelector(".source-lineno").remove();
    return [e.id, copy.textContent.replace(/\\n$/, "")];
})"""

# Each picture's smallest label as the screen shows it: the SVG is loaded inline at the width its <img> is
# drawn at, and each <text>'s font size is scaled by (drawn width / viewBox width); and whether its frame
# scrolls sideways (the picture wider than the column).
READ_PICTURES = """async () => Promise.all([...document.querySelectorAll("article img[src$='.svg']")].map(async img => {
    img.loading = "eager";
    await img.decode().catch(() => {});
    const svg = new DOMParser().parseFromString(await (await fetch(img.src)).text(), "image/svg+xml").documentElement;
    const drawn = img.getBoundingClientRect().width;
    const inline = document.body.appendChild(document.importNode(svg, true));
    const scale = drawn / inline.viewBox.baseVal.width;
    const sizes = [...inline.querySelectorAll("text")].map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
    inline.remove();
    const link = img.closest("a");
    const frame = img.closest(".figure-frame") || img.parentElement;
    return {src: img.getAttribute("src"), smallest: Math.min(...sizes), labels: sizes.length,
            link: link ? new URL(link.getAttribute("href"), location.href).href === img.src : false,
            drawn: drawn, column: document.querySelector("article").clientWidth,
            scrolls: frame.scrollWidth > frame.clientWidth + 1};
}))"""

READ_WIDTH = "() => document.scrollingElement.scrollWidth"

# The words a learner reads on the page as Chromium shows it: the article's rendered text (innerText) with
# every fold closed, code, formulas and the interactive examples counted, the headings' permalinks not.
READ_WORDS = """() => {
    const article = document.querySelector("article");
    const open = [...article.querySelectorAll("details")].filter(d => d.open);
    open.forEach(d => { d.open = false; });
    const hidden = [...article.querySelectorAll(".headerlink")];
    hidden.forEach(a => { a.style.display = "none"; });
    const text = article.innerText;
    open.forEach(d => { d.open = true; });
    hidden.forEach(a => { a.style.display = ""; });
    // the steps of each derivation to redo (a heading marked .redo): its display formulas, up to the next heading
    // of its level or above, those in folds left out
    const steps = [...article.querySelectorAll(":is(h2, h3).redo")].map(heading => {
        let count = 0;
        for (let e = heading.nextElementSibling; e && !(/^H[1-6]$/.test(e.tagName) && e.tagName <= heading.tagName);
             e = e.nextElementSibling) {
            if (e.tagName === "DETAILS") continue;
            count += [e, ...e.querySelectorAll("div.arithmatex")].filter(d => d.matches("div.arithmatex") &&
                                                                          !d.closest("details")).length;
        }
        return count;
    });
    return {words: text.split(/\\s+/).filter(w => w.length).length, text: text,
            redo: steps.length, steps: steps,
            stated: (article.querySelector("h1 + p em") || {textContent: ""}).textContent};
}"""

READ_TOC_AND_FOLDS = """() => ({
    toc: [...document.querySelectorAll("nav.md-nav--secondary a.md-nav__link")].map(a => a.hash.slice(1)),
    folded: [...document.querySelectorAll("article details :is(h2, h3, h4)[id]")].map(h => h.id),
    sections: [...document.querySelectorAll("article > h2[id]")].map(h => h.id),
    ids: [...document.querySelectorAll("[id]")].map(e => e.id),
})"""

# the TeX of every display formula, as MathJax typeset it
READ_DISPLAY_TEX = """() => window.MathJax && MathJax.startup.document
    ? [...MathJax.startup.document.math].filter(m => m.display).map(m => m.math) : []"""

# code blocks wider than the column: each one's first line and its overflow in pixels
READ_CODE_OVERFLOW = """() => [...document.querySelectorAll("article pre > code")]
    .filter(c => c.scrollWidth > c.clientWidth + 1)
    .map(c => [c.textContent.split("\\n")[0], c.scrollWidth - c.clientWidth])"""

# display formulas wider than the column, outside the closed folds: each one's TeX and its overflow in pixels
READ_WIDE_MATH = """() => [...document.querySelectorAll("article div.arithmatex")]
    .filter(d => !d.closest("details:not([open])") && d.scrollWidth > d.clientWidth + 1)
    .map(d => [(MathJax.startup.document.getMathItemsWithin(d)[0] || {math: d.textContent}).math.slice(0, 60),
               d.scrollWidth - d.clientWidth])"""

# each widget's first two children and its provenance fold, as a learner meets them
READ_WIDGETS = """() => [...document.querySelectorAll("div.widget")].map(w => {
    const source = w.querySelector("details.w-source");
    return {name: w.dataset.widget, ready: w.dataset.ready,
            first: [...w.children].slice(0, 2).map(e => [e.className, e.textContent]),
            source: source ? {last: source === w.lastElementChild, open: source.open,
                              summary: source.querySelector("summary").innerText,
                              caption: source.querySelector(".w-caption").textContent} : null};
})"""


class Tab:
    """One browser tab, reused for every page, with what each page said on the console and the requests
    that left the site while it was open."""

    def __init__(self, browser, site, width):
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.errors, self.foreign = [], []
        self.page.on("console", lambda message: self.errors.append(f"{message.text} ({message.location['url']})")
                     if message.type == "error" else None)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("request", lambda request: None if site.serves(request.url) else self.foreign.append(request.url))

    def open(self, url):
        """Go to url, wait until its formulas are typeset and its widgets built; the page's records start afresh."""
        import site_tools

        self.errors, self.foreign = [], []
        self.page.goto(url, wait_until="load")
        site_tools.typeset(self.page)
        self.page.wait_for_function(WIDGETS_SETTLED)
        return self.page


# The rendered source files (source/*.py/) are one template around lines of code: the browser opens these
# two, and tests/test_site.py reads every one of them from its HTML (its lines, its links, that it names
# nothing outside the site), which is a tenth of the time of opening 40 pages.
SOURCES_OPENED = ("source/transformer.py/", "source/gradcheck.py/")

SETTLED = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


def read_site(browser, site):
    """{(path, width): {name: what it read}}: every learner's page and SOURCES_OPENED at 1280 px, and each
    learner's page again at 400 px, the same load resized (no second load: the layout follows the width)."""
    seen = {}
    tab = Tab(browser, site, 1280)
    for path in site.pages():
        if path.startswith("source/") and path not in SOURCES_OPENED:
            continue
        tab.page.set_viewport_size({"width": 1280, "height": 900})
        page = tab.open(site.url(path))
        got = {"math": page.evaluate(READ_MATH), "text": page.evaluate(READ_TEXT), "images": page.evaluate(READ_IMAGES),
               "links": page.evaluate(READ_LINKS)}
        if path.startswith("source/"):
            got["source lines"] = page.evaluate(READ_SOURCE_LINES)
        else:
            got.update({"pictures": page.evaluate(READ_PICTURES), "width": page.evaluate(READ_WIDTH),
                        "words": page.evaluate(READ_WORDS), "toc and folds": page.evaluate(READ_TOC_AND_FOLDS),
                        "display tex": page.evaluate(READ_DISPLAY_TEX),
                        "code overflow": page.evaluate(READ_CODE_OVERFLOW), "wide math": page.evaluate(READ_WIDE_MATH),
                        "widgets": page.evaluate(READ_WIDGETS)})
        seen[path, 1280] = got
        if not path.startswith("source/"):
            page.set_viewport_size({"width": 400, "height": 900})
            page.evaluate(SETTLED)
            seen[path, 400] = {"pictures": page.evaluate(READ_PICTURES), "width": page.evaluate(READ_WIDTH)}
        got.update({"errors": tab.errors, "foreign": tab.foreign})
    tab.page.close()
    return seen
