// MathJax 3 reads this before it starts: it typesets only what pymdownx.arithmatex marked as math
// (\( \) inline, \[ \] display), and leaves code blocks and the rendered source files alone.
// An inline formula wider than its paragraph (on a narrow screen) is marked too-wide once typeset,
// and site.css lets it scroll on its own instead of widening the page.
function markWideFormulas() {
  document.querySelectorAll("span.arithmatex > mjx-container").forEach((formula) => {
    formula.classList.remove("too-wide");
    const block = formula.closest("p, li, td, th, div") || document.body;
    if (formula.getBoundingClientRect().width > block.clientWidth) formula.classList.add("too-wide");
  });
}

window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
  startup: {
    pageReady: () => MathJax.startup.defaultPageReady().then(markWideFormulas),
  },
};
window.addEventListener("resize", markWideFormulas);
