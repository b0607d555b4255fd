// The lab's page: it asks lab.py's JSON API for every number and only draws what comes back. No number shown
// here is computed here: the tokens, probabilities, attention weights, losses and gradients are the project's own
// functions' (lab.py says which), on the model the lab serves.
"use strict";

const $ = id => document.getElementById(id);
const state = {
  run: null,        // the run shown, by its name in the listing; null: the model the lab started with
  position: null,   // the position the next-token view and the maps' marks are at
  pinned: false,    // the learner chose that position (else it follows the end of the text)
  look: null, learn: null, runs: null, runsSeen: "",
  seed: 0, draws: 0,
  asked: 0,         // requests made: an answer to an older one is dropped
};

// --- talking to the lab ---------------------------------------------------------------------------------------

async function api(path, body) {
  const options = body === undefined ? {} :
    {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
  const response = await fetch(path, options);
  let answer;
  try {
    answer = await response.json();
  } catch (error) {  // not the lab's JSON: a proxy's page, say
    answer = {error: `${response.status} ${response.statusText}`};
  }
  if (!response.ok) throw new Error(answer.error || `${response.status} ${response.statusText}`);
  return answer;
}

function say(id, text) {
  const element = $(id);
  element.textContent = text || "";
  element.hidden = !text;
}

function sampling() {
  return {temperature: Number($("temperature").value), top_k: Math.round(Number($("top_k").value)),
          top_p: Number($("top_p").value)};
}

let timer = null;
function later(what) {
  clearTimeout(timer);
  timer = setTimeout(() => refresh(what), 250);
}

// look (views 1-4), then learn (view 5), for the text as it is now; what: {look, learn}, both by default
async function refresh(what = {look: true, learn: true}) {
  const text = $("text").value;
  const asked = ++state.asked;
  if (!text) {
    state.look = state.learn = null;
    clearViews();
    return;
  }
  try {
    if (what.look || !state.look) {
      const look = await api("/api/look", {text, run: state.run, ...sampling()});
      if (asked !== state.asked) return;
      state.look = look;
      showLook();
    }
    if (what.learn || !state.learn) {
      if (state.look.tokens.length >= 2) {
        const learn = await api("/api/learn", {text, run: state.run, lr: Number($("lr").value)});
        if (asked !== state.asked) return;
        state.learn = learn;
        showLearn();
      } else {
        state.learn = null;
        clearLearn("The backward needs two tokens or more: each position learns to predict the next one.");
      }
    }
    say("error", "");
    document.body.dataset.drawn = String(asked);  // every view drawn for this text (the tests wait for it)
  } catch (error) {
    if (asked === state.asked) say("error", error.message);
  }
}

// --- what tokens look like --------------------------------------------------------------------------------------

function visible(text) {  // a token's text with its spaces, newlines and tabs shown
  return text.replace(/ /g, "\u2423").replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5") || "\u2205";
}

function percent(p) {
  if (p >= 0.1) return (100 * p).toFixed(1) + "%";
  if (p >= 0.0001) return (100 * p).toFixed(2) + "%";
  return p === 0 ? "0" : "<0.01%";
}

function inBits() { return $("bits").checked; }
function lossText(nats) {
  return inBits() ? `${(nats / Math.LN2).toFixed(2)} bits` : `${nats.toFixed(2)} nats`;
}

function el(tag, className, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}

function bar(label, fraction, value, extra) {  // a row of a bar chart: label, bar (0..1 of its track), value
  const row = el("div", "bar");
  row.append(el("span", "bar-label", label));
  const track = el("span", "bar-track");
  const fill = el("span", "bar-fill");
  fill.style.width = `${Math.max(0, Math.min(1, fraction)) * 100}%`;
  track.append(fill);
  if (extra !== undefined) {
    const kept = el("span", "bar-kept");
    kept.style.width = `${Math.max(0, Math.min(1, extra)) * 100}%`;
    track.append(kept);
  }
  row.append(track, el("span", "bar-value", value));
  return row;
}

// --- views 1 to 4 -----------------------------------------------------------------------------------------------

function showLook() {
  const look = state.look, T = look.tokens.length;
  showModel(look.model);
  if (!state.pinned || state.position === null || state.position >= T) {
    state.position = T - 1;
    state.pinned = false;
  }
  const said = [];
  if (look.left_out.length) {
    said.push(`Left out, never seen by the model: ${look.left_out.map(c => JSON.stringify(c)).join(", ")}.`);
  }
  if (look.cut) {
    said.push(`The text is longer than the lab reads: its first ${look.cut} tokens are cut, the last ` +
      `${look.window} kept.`);
  }
  said.push(`${T} token${T === 1 ? "" : "s"}.`);
  $("said").textContent = said.join(" ");
  showTokens();
  showNext();
  showAttention();
  showLayers();
}

function showTokens() {
  const look = state.look, worst = Math.log(look.model.vocab_size);  // a uniform guess's loss: full red
  const box = $("tokens");
  box.replaceChildren();
  look.tokens.forEach((token, t) => {
    const chip = el("button", "token" + (t === state.position ? " chosen" : ""));
    chip.type = "button";
    chip.append(el("span", "token-text", visible(token.text)), el("span", "token-id", String(token.id)));
    if (token.loss === null) {
      chip.title = `id ${token.id}: the first token, which nothing predicts`;
      chip.classList.add("unscored");
    } else {
      const heat = Math.min(1, token.loss / worst);
      chip.style.background = `hsl(4, 85%, ${Math.round(97 - 45 * heat)}%)`;
      chip.title = `id ${token.id}: loss ${lossText(token.loss)}, p = ${percent(Math.exp(-token.loss))}`;
    }
    chip.addEventListener("click", () => {
      state.position = t;
      state.pinned = true;
      showTokens();
      showNext();
      markRows(t);
    });
    box.append(chip);
  });
}

function showNext() {
  const look = state.look, t = state.position, s = look.sampling;
  const off = (value, isOff) => isOff ? `${value} (off)` : String(value);
  $("next-said").textContent = `After “${visible(look.tokens[t].text)}” (position ${t} of ` +
    `${look.tokens.length}): ` +
    `temperature ${s.temperature}, top-k ${off(s.top_k, s.top_k === 0)}, top-p ${off(s.top_p, s.top_p === 1)} keep ` +
    `${look.kept_counts[t].toLocaleString()} of ${look.model.vocab_size.toLocaleString()} tokens, ` +
    `${percent(look.kept_mass[t])} of the model's probability. Grey: the model's probability; blue: the probability ` +
    `of being drawn.`;
  const box = $("next");
  box.replaceChildren();
  look.next[t].forEach((guess, i) => {
    const kept = look.kept[t][i];
    const said = `${percent(guess.prob)} → ${kept > 0 ? percent(kept) : "dropped"}`;
    const row = bar(visible(guess.text), guess.prob, said, kept);
    row.title = `id ${guess.id}`;
    if (kept === 0) row.classList.add("dropped");
    box.append(row);
  });
}

function showAttention() {
  const maps = state.look.attention, T = state.look.tokens.length;
  const side = Math.min(240, 1100 / maps[0].length);  // a block's maps side by side in about 1100 px
  const cell = Math.max(2, Math.min(14, Math.floor(side / T)));
  const box = $("attention");
  box.replaceChildren();
  maps.forEach((heads, layer) => {
    const row = el("div", "block-row");
    row.append(el("div", "block-label", `block ${layer}`));
    heads.forEach((weights, head) => {
      const figure = el("figure", "map");
      const canvas = el("canvas");
      canvas.width = canvas.height = T;  // a pixel a weight, drawn cell times larger
      canvas.style.width = canvas.style.height = `${cell * T}px`;
      canvas.setAttribute("aria-label", `attention of block ${layer}, head ${head}`);
      drawMap(canvas.getContext("2d"), weights);
      const mark = el("div", "row-mark");
      mark.style.height = `${cell}px`;
      const frame = el("div", "map-frame");
      frame.append(canvas, mark);
      figure.append(frame, el("figcaption", "", `head ${head}`));
      canvas.addEventListener("mousemove", event => {
        const t = Math.min(T - 1, Math.max(0, Math.floor(event.offsetY / cell)));
        markRows(t);
        showReads(layer, head, t);
      });
      canvas.addEventListener("mouseleave", () => markRows(state.position));
      row.append(figure);
    });
    box.append(row);
  });
  markRows(state.position);
  showReads(0, 0, state.position);
}

function drawMap(context, weights) {  // weight w: the blue (25, 55, 160) at opacity w over white; the future grey
  const T = weights.length, image = context.createImageData(T, T), blue = [25, 55, 160];
  for (let t = 0; t < T; t++) {
    for (let s = 0; s < T; s++) {
      const at = 4 * (t * T + s), w = weights[t][s];
      for (let c = 0; c < 3; c++) image.data[at + c] = s > t ? 228 : Math.round(255 - (255 - blue[c]) * w);
      image.data[at + 3] = 255;
    }
  }
  context.putImageData(image, 0, 0);
}

function markRows(t) {
  if (t === null || !state.look) return;
  const T = state.look.tokens.length;
  document.querySelectorAll("#attention .row-mark").forEach(mark => {
    mark.style.top = `${(t / T) * 100}%`;
  });
}

function showReads(layer, head, t) {
  const look = state.look, weights = look.attention[layer][head][t];
  const box = $("reads");
  box.replaceChildren(el("span", "reads-label", `block ${layer}, head ${head}: position ${t} reads`));
  look.tokens.slice(0, t + 1).forEach((token, s) => {
    const chip = el("span", "token");
    chip.append(el("span", "token-text", visible(token.text)), el("span", "token-id", percent(weights[s])));
    chip.style.background = `rgba(25, 55, 160, ${weights[s] * 0.85})`;
    if (weights[s] > 0.5) chip.style.color = "white";
    box.append(chip);
  });
}

function showLayers() {
  const look = state.look;
  const table = el("table", "lens");
  const head = el("tr");
  head.append(el("th", "", "after ↓ / position →"));
  look.tokens.forEach(token => head.append(el("th", "lens-token", visible(token.text))));
  table.append(head);
  look.layers.forEach(layer => {
    const row = el("tr");
    row.append(el("th", "", layer.after));
    layer.top.forEach((top, t) => {
      const best = top[0], cell = el("td", "", visible(best.text));
      cell.style.background = `rgba(25, 120, 60, ${0.08 + 0.6 * best.prob})`;
      const next = t + 1 < look.tokens.length ? look.tokens[t + 1] : null;
      if (next && best.id === next.id) cell.classList.add("right");
      cell.title = top.map(g => `${visible(g.text)} ${percent(g.prob)}`).join(", ") +
        (next ? `; the next token, “${visible(next.text)}”: ${percent(layer.next_prob[t])}` : "");
      row.append(cell);
    });
    table.append(row);
  });
  $("layers").replaceChildren(table);
}

// --- view 5 -------------------------------------------------------------------------------------------------------

function firstOrderSaid(predicted) {  // L − lr·|g|², the loss after the step were it a straight line along g
  const said = "To first order, L − lr·|g|²";
  if (predicted === null) return `${said} is no number either: lr·|g|² overflows.`;
  if (predicted >= 0) return `${said} = ${lossText(predicted)}: the loss were it a straight line along the ` +
    "gradient. A short step lands near it; a longer one meets the loss's curve, and lands above it.";
  return `${said} = ${lossText(predicted)}, below 0, which no loss can be (a loss is −ln of a probability): the ` +
    "straight line along the gradient holds only for a step short enough that the loss barely curves along it, " +
    "and this one is longer. Shorten the step until the two agree.";
}

function showLearn() {
  const learn = state.learn;
  showModel(learn.model);
  const step = $("step");
  step.replaceChildren();
  const after = learn.loss_after === null ? learn.loss_after_said : lossText(learn.loss_after);
  step.append(el("p", "", `Loss ${lossText(learn.loss)} per prediction, over ${learn.position_losses.length} ` +
    `predictions; the gradient's norm |g| = ${learn.grad_norm.toPrecision(4)}.`));
  step.append(el("p", "step-result", `One plain gradient step p − ${learn.lr} · g, on a copy: the loss becomes ` +
    `${after}.`));
  step.append(el("p", "note", firstOrderSaid(learn.predicted_loss_after)));
  const better = learn.position_losses.filter((before, t) => learn.position_losses_after[t] !== null &&
    learn.position_losses_after[t] < before).length;
  const changes = el("details", "changes");
  changes.append(el("summary", "", `Each prediction's loss before and after the step: ${better} of ` +
    `${learn.position_losses.length} lower`));
  learn.position_losses.forEach((before, t) => {
    const now = learn.position_losses_after[t];
    const chip = el("span", "change " + (now !== null && now < before ? "better" : "worse"));
    chip.textContent = `${visible(learn.tokens[t].text)}→${visible(learn.tokens[t + 1].text)} ` +
      `${before.toFixed(2)} → ${now === null ? "?" : now.toFixed(2)}`;
    changes.append(chip);
  });
  step.append(changes);

  const inputs = $("input-grads"), most = Math.max(...learn.input_grad_norms);
  inputs.replaceChildren();
  learn.input_grad_norms.forEach((norm, t) => {  // position t's input vector, the token that stands there
    const chip = el("span", "token");
    chip.append(el("span", "token-text", visible(learn.tokens[t].text)), el("span", "token-id", norm.toPrecision(2)));
    chip.style.background = `rgba(194, 65, 12, ${0.85 * norm / most})`;
    if (norm / most > 0.55) chip.style.color = "white";
    chip.title = `position ${t}: |dL/dX0[${t}]| = ${norm.toPrecision(4)}`;
    inputs.append(chip);
  });

  const grads = $("grads"), largest = Math.max(...Object.values(learn.grad_norms));
  grads.replaceChildren();
  learn.groups.forEach(group => {
    grads.append(el("div", "group", group.name));
    group.tensors.forEach(name => {
      grads.append(bar(name, learn.grad_norms[name] / largest, learn.grad_norms[name].toPrecision(3)));
    });
  });
}

function clearLearn(message) {
  $("step").replaceChildren(el("p", "note", message));
  $("input-grads").replaceChildren();
  $("grads").replaceChildren();
}

function clearViews() {
  for (const id of ["tokens", "next", "attention", "reads", "layers"]) $(id).replaceChildren();
  $("said").textContent = "";
  clearLearn("Type a text above.");
}

// --- the model and view 6 -----------------------------------------------------------------------------------------

function showModel(model) {
  $("model").textContent = `${model.about}. ${model.layers} block${model.layers === 1 ? "" : "s"} of ` +
    `${model.heads} head${model.heads === 1 ? "" : "s"}; it reads up to ${model.window} tokens.`;
  say("warning", model.warning);
}

async function pollRuns() {
  if (document.hidden) return;
  try {
    const listing = await api("/api/runs");
    const seen = JSON.stringify(listing);
    if (seen !== state.runsSeen) {
      state.runsSeen = seen;
      state.runs = listing;
      showRuns();
    }
  } catch (error) {
    $("runs").replaceChildren(el("p", "error", `The runs cannot be listed: ${error.message}`));
  }
}

function shownRun() { return state.run === null ? (state.runs && state.runs.first) : state.run; }

function showRuns() {
  const listing = state.runs, box = $("runs");
  box.replaceChildren();
  if (!listing.runs.length) {
    box.append(el("p", "note", `No runs in ${listing.home}/runs/ yet: python train.py trains one.`));
  }
  const shown = shownRun();
  if (state.run !== null && !listing.runs.some(run => run.name === state.run)) {
    box.append(el("p", "warning", `The run ${state.run} shown in the lab is no longer in ${listing.home}/runs/ ` +
      `(deleted?): the lab answers with the model it read before.`));
  }
  const table = el("table", "runs");
  const head = el("tr");
  for (const title of ["", "run", "state", "steps", "best bits/char", "losses"]) head.append(el("th", "", title));
  table.append(head);
  for (const run of listing.runs) {
    const row = el("tr", run.name === shown ? "shown" : "");
    const cell = el("td");
    const button = el("button", "", run.name === shown ? "shown" : "show");
    button.type = "button";
    button.disabled = run.name === shown || !run.has_model || Boolean(run.damaged);
    button.addEventListener("click", () => { state.run = run.name; state.runsSeen = ""; showRuns(); refresh(); });
    cell.append(button);
    const steps = run.total_steps ? `${run.step.toLocaleString()}/${run.total_steps.toLocaleString()}` :
      run.step.toLocaleString();
    const said = run.damaged ? el("td", "error", `damaged: ${run.damaged}`) : el("td", "", run.state);
    row.append(cell, el("td", "", run.name), said,
      el("td", "", steps), el("td", "", run.best_bpc === null ? "not yet" : run.best_bpc.toFixed(3)));
    const curves = el("td");
    if (run.curves) curves.append(curve(run.curves));
    row.append(curves);
    table.append(row);
  }
  box.append(table);
}

function curve(curves) {  // an svg of a run's losses: training as a line, validation as dots
  const width = 260, height = 70, pad = 4, ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  const steps = curves.steps.concat(curves.val_steps), losses = curves.train.concat(curves.val);
  if (!steps.length) return svg;
  const x0 = Math.min(...steps), x1 = Math.max(...steps), y0 = Math.min(...losses), y1 = Math.max(...losses);
  const x = step => pad + (width - 2 * pad) * (x1 > x0 ? (step - x0) / (x1 - x0) : 0.5);
  const y = loss => pad + (height - 2 * pad) * (y1 > y0 ? (y1 - loss) / (y1 - y0) : 0.5);
  const line = document.createElementNS(ns, "polyline");
  const points = curves.steps.map((step, i) => `${x(step).toFixed(1)},${y(curves.train[i]).toFixed(1)}`);
  line.setAttribute("points", points.join(" "));
  line.setAttribute("class", "train-line");
  svg.append(line);
  curves.val_steps.forEach((step, i) => {
    const dot = document.createElementNS(ns, "circle");
    dot.setAttribute("cx", x(step).toFixed(1));
    dot.setAttribute("cy", y(curves.val[i]).toFixed(1));
    dot.setAttribute("r", "2.5");
    dot.setAttribute("class", "val-dot");
    svg.append(dot);
  });
  const title = document.createElementNS(ns, "title");
  title.textContent = `training loss ${y1.toFixed(2)} .. ${y0.toFixed(2)} over steps ${x0}..${x1}`;
  svg.append(title);
  return svg;
}

// --- wiring ---------------------------------------------------------------------------------------------------

async function start() {
  try {
    const started = await api("/api/start");
    showModel(started.model);
    $("temperature").value = started.sampling.temperature;
    $("top_k").value = started.sampling.top_k;
    $("top_p").value = started.sampling.top_p;
    $("lr").value = started.lr;
    $("lr-slider").value = Math.log10(started.lr);
    state.seed = started.seed;
    $("text").value = started.text;  // a text the model read in training: the views open already drawn
    say("text-from", `The page opened with ${started.text_from}; type over it.`);
  } catch (error) {
    say("error", error.message);
  }
  $("text").addEventListener("input", () => {
    say("text-from", "");
    later({look: true, learn: true});
  });
  for (const id of ["temperature", "top_k", "top_p"]) {
    $(id).addEventListener("input", () => later({look: true, learn: false}));
  }
  $("lr-slider").addEventListener("input", () => {
    $("lr").value = Number((10 ** Number($("lr-slider").value)).toPrecision(2));
    later({look: false, learn: true});
  });
  $("lr").addEventListener("input", () => later({look: false, learn: true}));
  $("bits").addEventListener("change", () => {
    $("loss-unit-said").textContent = inBits() ? "in bits" : "in nats";
    if (state.look) showTokens();
    if (state.learn) showLearn();
  });
  $("continue").addEventListener("click", async () => {
    const text = $("text").value;
    if (!text) return;
    try {
      const drawn = await api("/api/continue", {text, run: state.run, ...sampling(), seed: state.seed + state.draws});
      state.draws += 1;
      $("text").value = drawn.text;
      state.pinned = false;
      refresh();
    } catch (error) {
      say("error", error.message);
    }
  });
  clearViews();
  if ($("text").value) refresh();
  pollRuns();
  setInterval(pollRuns, 5000);
}

document.addEventListener("DOMContentLoaded", start);
