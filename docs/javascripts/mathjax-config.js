// MathJax 3 reads this before it starts: it typesets only what pymdownx.arithmatex marked as math
// (\( \) inline, \[ \] display), and leaves code blocks and the rendered source files alone.
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
};
