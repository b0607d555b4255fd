// The pages' interactive examples. Each <div class="widget" data-widget="NAME"> is built from
// widgets/NAME.json, which docs/make_widgets.py wrote by running the project's own NumPy code on
// every choice the example offers. This file computes no number of the model: it looks the values of
// the chosen case up and lays them out. The one thing it does itself is draw tokens from the
// probabilities it shows (the sampling example), with a seeded generator, so a draw can be replayed.
// The data is read from beside this file, so it works wherever the site is served from, and nothing
// leaves the site.
(function () {
  "use strict";

  const dataFolder = new URL(".", document.currentScript.src);

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A number as the pages write them: at most 4 decimals, no trailing zeros; exponents for numbers
  // too small or too large for that. Non-finite numbers arrive as the strings "inf", "-inf", "nan".
  function format(value) {
    if (typeof value === "string") return value;
    if (typeof value === "boolean") return value ? "1" : "0";
    const size = Math.abs(value);
    if (size >= 1e6 || (size > 0 && size < 5e-5)) return value.toExponential(3).replace(/\.?0+e/, "e");
    return String(Number(value.toFixed(4)));
  }

  function shapeOf(value) {
    const shape = [];
    for (let v = value; Array.isArray(v); v = v[0]) shape.push(v.length);
    return shape;
  }

  function isFiniteValue(value) {
    return typeof value !== "string" || !["inf", "-inf", "nan"].includes(value);
  }

  // The controls' values, with a control that needs another (ids[2] needs T > 2) as "-" while it is off.
  function choices(spec, root) {
    const chosen = {};
    for (const control of spec.controls) {
      const input = root.querySelector(`[data-control="${control.name}"]`);
      chosen[control.name] = control.slider ? control.options[Number(input.value)][0] : input.value;
    }
    for (const control of spec.controls) {
      const input = root.querySelector(`[data-control="${control.name}"]`);
      const off = control.needs && !(Number(chosen[control.needs[0]]) > control.needs[1]);
      input.disabled = Boolean(off);
      if (off) chosen[control.name] = "-";
    }
    return chosen;
  }

  // Every field of the chosen case: one lookup in each table, by the controls that table depends on.
  function lookUp(spec, chosen) {
    const fields = {};
    for (const [name, table] of Object.entries(spec.tables)) {
      const key = table.by.map((control) => chosen[control]).join("|");
      const found = table.cases[key];
      if (!found) throw new Error(`${name} holds no case ${key}`);
      Object.assign(fields, found);
    }
    return fields;
  }

  function valueCell(value, differs) {
    const cell = element("td", "", format(value));
    if (!isFiniteValue(value)) cell.classList.add("w-nonfinite");
    if (differs) cell.classList.add("w-differs");
    return cell;
  }

  function matrixPanel(panel, value, other, markedRow) {
    const shape = shapeOf(value);
    const asRows = (v) => (shape.length === 2 ? v : [shape.length === 1 ? v : [v]]);  // a table's rows
    const rows = asRows(value);
    const otherRows = other === undefined ? null : asRows(other);
    const table = element("table", "w-matrix");
    rows.forEach((row, i) => {
      const tr = element("tr");
      if (i === markedRow && shape.length === 2) tr.classList.add("w-marked");
      row.forEach((v, j) => tr.append(valueCell(v, otherRows !== null && format(v) !== format(otherRows[i][j]))));
      table.append(tr);
    });
    const shown = shape.length ? `, shape (${shape.join(", ")}${shape.length === 1 ? "," : ""})` : "";
    return [panel.title + shown, table];
  }

  function columnsPanel(panel, fields) {
    const table = element("table", "w-columns");
    const compare = panel.compare || {};  // {naive column: the right one}
    const head = element("tr");
    panel.title.forEach((label, j) => {
      const th = element("th", "", label);
      if (panel.field[j] in compare) th.classList.add("w-wrong");
      head.append(th);
    });
    table.append(head);
    fields[panel.field[0]].forEach((_, i) => {
      const tr = element("tr");
      panel.field.forEach((name) => {
        const value = fields[name][i];
        const differs = name in compare && format(value) !== format(fields[compare[name]][i]);
        const cell = Array.isArray(value)
          ? element("td", "", `[${value.map(format).join(", ")}]`)
          : valueCell(value, differs);
        if (panel.bars.includes(name) && typeof value === "number") {
          const bar = element("span", "w-bar");
          bar.style.width = `${(6 * value).toFixed(2)}em`;  // a probability of 1 is 6em long
          cell.prepend(bar);
        }
        cell.dataset.column = name;
        tr.append(cell);
      });
      table.append(tr);
    });
    return ["", table];
  }

  // A weight in [0, 1] as a cell shaded by it: queries down, keys across, the chosen query's row marked.
  function heatmapPanel(panel, value, markedRow) {
    const table = element("table", "w-heatmap");
    const head = element("tr");
    head.append(element("th", "", "q \\ k"));
    value[0].forEach((_, j) => head.append(element("th", "", String(j))));
    table.append(head);
    value.forEach((row, i) => {
      const tr = element("tr");
      if (i === markedRow) tr.classList.add("w-marked");
      tr.append(element("th", "", String(i)));
      row.forEach((v) => {
        const cell = valueCell(v, false);
        const weight = Math.min(1, Math.max(0, Number(v) || 0));
        cell.style.background = `rgba(63, 81, 181, ${weight.toFixed(3)})`;
        if (weight > 0.5) cell.classList.add("w-dark");
        tr.append(cell);
      });
      table.append(tr);
    });
    return [panel.title, table];
  }

  // Mulberry32: a small seeded generator of uniform numbers in [0, 1). Example: random(1)() === 0.6270739405881613
  function random(seed) {
    let state = seed >>> 0;
    return () => {
      state = (state + 0x6d2b79f5) >>> 0;
      let z = state;
      z = Math.imul(z ^ (z >>> 15), z | 1);
      z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
      return ((z ^ (z >>> 14)) >>> 0) / 4294967296;
    };
  }

  // The index of the token a uniform u in [0, 1) lands on, each token owning a stretch as long as its
  // probability; the probabilities are scaled to their sum, which rounding keeps a hair from 1.
  function drawIndex(probs, u) {
    const total = probs.reduce((a, b) => a + b, 0);
    let left = u * total;
    for (let i = 0; i < probs.length; i++) {
      if (probs[i] > 0 && left < probs[i]) return i;
      left -= probs[i];
    }
    return probs.findLastIndex((p) => p > 0);
  }

  // A button that draws 5 tokens from the probabilities shown: the listed tokens', then the rest's together.
  function drawPanel(panel, fields, root) {
    const [textsField, probsField] = panel.bars;
    const texts = [...fields[textsField], "another token"];
    const probs = [...fields[probsField], fields[panel.field]].map((p) => (typeof p === "number" ? p : 0));
    const box = element("div", "w-draw");
    const button = element("button", "md-button", panel.title);
    button.type = "button";
    const drawn = element("p", "w-drawn");
    button.addEventListener("click", () => {
      root.drawSeed = (root.drawSeed || 0) + 1;
      const next = random(root.drawSeed);
      drawn.replaceChildren(`seed ${root.drawSeed}: `);
      for (let n = 0; n < 5; n++) {
        const i = drawIndex(probs, next());
        const token = element("code", "w-token", texts[i]);
        token.dataset.index = String(i);
        drawn.append(token, " ");
      }
    });
    box.append(button, drawn);
    return ["", box];
  }

  // The panels in their groups: each run of panels of one group in a box titled by it.
  function groupBox(panels, group) {
    if (!group) return panels;
    const box = element("section", "w-group");
    box.dataset.group = group;
    box.append(element("p", "w-group-title", group));
    const inner = element("div", "w-panels");
    box.append(inner);
    panels.append(box);
    return inner;
  }

  function render(spec, root) {
    const chosen = choices(spec, root);
    for (const control of spec.controls.filter((c) => c.slider)) {
      const input = root.querySelector(`[data-control="${control.name}"]`);
      root.querySelector(`[data-shows="${control.name}"]`).textContent = control.options[Number(input.value)][1];
    }
    const panels = root.querySelector(".w-panels");
    panels.replaceChildren();
    let fields;
    try {
      fields = lookUp(spec, chosen);
    } catch (err) {
      panels.append(element("p", "widget-missing", `No values for this choice: ${err.message}.`));
      return;
    }
    let group = null, target = panels;
    for (const panel of spec.panels) {
      if (panel.group !== group) {
        group = panel.group;
        target = groupBox(panels, group);
      }
      const figure = element("figure", "w-panel");
      figure.dataset.field = Array.isArray(panel.field) ? panel.field.join(" ") : panel.field;
      if (panel.wrong) figure.classList.add("w-wrong");
      let title, body;
      if (panel.kind === "note") {
        [title, body] = ["", element("p", "w-note", fields[panel.field])];
        figure.classList.add("w-wide");
      } else if (panel.kind === "columns") {
        [title, body] = columnsPanel(panel, fields);
        figure.classList.add("w-wide");
      } else if (panel.kind === "heatmap") {
        [title, body] = heatmapPanel(panel, fields[panel.field], Number(chosen[panel.row]));
      } else if (panel.kind === "draw") {
        [title, body] = drawPanel(panel, fields, root);
        figure.classList.add("w-wide");
        figure.dataset.field = "draw";
      } else {
        const marked = panel.row === null ? -1 : Number(chosen[panel.row]);
        const other = panel.compare ? fields[panel.compare] : undefined;
        [title, body] = matrixPanel(panel, fields[panel.field], other, marked);
      }
      if (title) figure.append(element("figcaption", "", title));
      figure.append(body);
      target.append(figure);
    }
  }

  function controlInput(control) {
    const label = element("label", "w-control", `${control.label} `);
    let input;
    if (control.slider) {
      input = element("input");
      Object.assign(input, { type: "range", min: 0, max: control.options.length - 1, step: 1 });
      input.value = String(control.options.findIndex((option) => option[0] === control.initial));
      const shows = element("output");
      shows.dataset.shows = control.name;
      label.append(input, " ", shows);
    } else {
      input = element("select");
      for (const [value, text] of control.options) {
        input.append(new Option(text, value, false, value === control.initial));
      }
      label.append(input);
    }
    input.dataset.control = control.name;
    return label;
  }

  function build(root, spec) {
    const controls = element("div", "w-controls");
    spec.controls.forEach((control) => controls.append(controlInput(control)));
    const source = element("details", "w-source");
    source.append(element("summary", "", "Where these numbers come from"), element("p", "w-caption", spec.caption));
    root.replaceChildren(element("p", "w-title", spec.title), element("p", "w-try", spec.try), controls,
      element("div", "w-panels"), source);
    controls.addEventListener("input", () => render(spec, root));
    render(spec, root);
    root.dataset.ready = "true";
  }

  function missing(root, file) {
    root.replaceChildren(element("p", "widget-missing",
      `This interactive example could not load its numbers from widgets/${file}. ` +
      "Write them with python docs/make_widgets.py and build the site again."));
    root.dataset.ready = "missing";
  }

  function start(root) {
    if (root.dataset.ready) return;
    const file = `${root.dataset.widget}.json`;
    root.dataset.ready = "loading";
    fetch(new URL(file, dataFolder))
      .then((response) => (response.ok ? response.json() : null))
      .catch(() => null)  // no file, or not JSON: the message below; a fault in build() stays an error
      .then((spec) => (spec ? build(root, spec) : missing(root, file)));
  }

  function startAll() {
    document.querySelectorAll("div.widget[data-widget]").forEach(start);
  }

  if (window.document$) window.document$.subscribe(startAll);  // Material's page-load signal
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", startAll);
  else startAll();
})();
