// The learner's path as one printable document, run by docs/make_pdf.py in a page of the built
// site: each page's article, fetched from the site, one after another; its ids prefixed so that
// they stay unique, links between them kept inside the document; every display equation numbered
// in order, (1) to (N), with \tag{N}; and under each "Where is it used?" the numbers of the
// equations it covers (those since the previous one on the page). Returns what it numbered.
async ({ paths, title }) => {
  // Consecutive numbers as one range. Example: [1, 2, 3, 5] -> "(1)–(3), (5)"
  const numbers = (list) => {
    const runs = [];
    for (const n of list) {
      const run = runs[runs.length - 1];
      if (run && run[1] === n - 1) {
        run[1] = n;
      } else {
        runs.push([n, n]);
      }
    }
    return runs.map(([first, last]) => (first === last ? `(${first})` : `(${first})–(${last})`)).join(", ");
  };
  const pageIds = new Map(paths.map((path, k) => [new URL(path, location.origin + "/").pathname, `p${k + 1}`]));
  const book = document.createElement("div");
  book.className = "md-typeset pdf-book";
  const heading = document.createElement("h1");
  heading.className = "pdf-title";
  heading.textContent = title;
  book.append(heading);
  let equations = 0;
  const whereUsed = [];
  for (const path of paths) {
    const url = new URL(path, location.origin + "/");
    const response = await fetch(url);
    if (!response.ok) {
      throw new Error(`${url} answered ${response.status}`);
    }
    const html = new DOMParser().parseFromString(await response.text(), "text/html");
    const article = html.querySelector("article.md-content__inner");
    const prefix = pageIds.get(url.pathname);
    article.querySelectorAll("a.headerlink, .md-source-file, .md-content__button").forEach((e) => e.remove());
    article.querySelectorAll("details").forEach((e) => { e.open = true; }); // a book prints the folded reference too
    article.querySelectorAll("[id]").forEach((e) => { e.id = `${prefix}-${e.id}`; });
    article.querySelectorAll("img[src]").forEach((img) => { img.src = new URL(img.getAttribute("src"), url).href; });
    article.querySelectorAll("a[href]").forEach((a) => {
      const target = new URL(a.getAttribute("href"), url);
      if (target.origin !== location.origin) {
        return; // a link out of the site stays as it is
      }
      const page = pageIds.get(target.pathname);
      if (page) {
        a.setAttribute("href", target.hash ? `#${page}-${target.hash.slice(1)}` : `#${page}`);
      } else {
        a.replaceWith(...a.childNodes); // a citation or a page off the path: its text, no dead link in the PDF
      }
    });
    let covered = [];
    for (const element of article.querySelectorAll("div.arithmatex, h3")) {
      if (element.tagName === "DIV") {
        equations += 1;
        element.textContent = element.textContent.replace(/\\\]\s*$/, `\\tag{${equations}}\\]`);
        covered.push(equations);
      } else if (element.textContent.trim() === "Where is it used?") {
        const note = document.createElement("p");
        note.className = "pdf-equations";
        note.textContent = covered.length ? `Equations ${numbers(covered)} of this PDF.` : "No numbered equation.";
        element.after(note);
        whereUsed.push({ page: path, equations: covered });
        covered = [];
      }
    }
    const section = document.createElement("section");
    section.className = "pdf-page";
    section.id = prefix;
    section.append(...article.childNodes);
    book.append(section);
  }
  document.querySelector("article.md-content__inner").replaceChildren(book); // Material prints only the article
  MathJax.typesetClear();
  await MathJax.typesetPromise([book]);
  const errors = [...book.querySelectorAll("mjx-merror")].map((e) => e.textContent);
  return { equations, whereUsed, errors };
}
