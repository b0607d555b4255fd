// On a rendered source file, a citation of a range (file.py:N-M) arrives as ?lines=N-M#LN: the
// browser lights line N (CSS :target), and this lights the rest of the range with it.
function lightCitedLines() {
  document.querySelectorAll(".source-line.cited").forEach((line) => line.classList.remove("cited"));
  const range = /^(\d+)-(\d+)$/.exec(new URLSearchParams(window.location.search).get("lines") || "");
  if (!range || window.location.hash !== `#L${range[1]}`) {
    return; // no range, or the reader has since followed another line's link
  }
  for (let n = Number(range[1]); n <= Number(range[2]); n++) {
    document.getElementById(`L${n}`)?.classList.add("cited");
  }
}

document.addEventListener("DOMContentLoaded", lightCitedLines);
window.addEventListener("hashchange", lightCitedLines);
