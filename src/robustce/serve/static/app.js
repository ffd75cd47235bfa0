// robustce recourse page: plain JavaScript, no build step, everything served by the service.
//
// Every label, value and message from the service (model ids, feature names, categories, class
// names, statuses, errors) is put in the page as text: elements are built with createElement
// and filled with textContent / append(string), never parsed as HTML, so a label such as
// `<img src=x onerror=...>` shows as those characters. The page runs under a strict
// Content-Security-Policy (no inline script or style; see docs/serve.md, "Security").
"use strict";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const state = { models: [], model: null, applicants: [], lastCase: null };

// The API token lives in this variable only (never in sessionStorage/localStorage or a
// cookie): another script on the origin cannot read it back, and it is gone when the tab closes
// or reloads (the field asks for it again).
let apiToken = "";

/** An element `tag` with attributes `attrs` (className as the class) and children (strings as text). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "className") node.className = v; else node.setAttribute(k, String(v));
  }
  node.append(...children);
  return node;
}

/** An SVG element `tag` with attributes `attrs` and text `text`. */
function svgEl(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

async function api(path, options = {}) {
  const headers = { "Content-Type": "application/json" };
  if (apiToken) headers.Authorization = "Bearer " + apiToken;
  const resp = await fetch(path, { ...options, headers });
  let body = null;
  try { body = await resp.json(); } catch (e) { body = { detail: resp.statusText }; }
  if (resp.status === 401) { $("token-label").hidden = false; }
  if (!resp.ok) {
    const d = body && body.detail;
    const msg = Array.isArray(d) ? d.map((e) => `${(e.loc || []).slice(-1)[0]}: ${e.msg}`).join("\n") : d;
    throw new Error(`${resp.status}: ${msg}`);
  }
  return body;
}

function fmt(v) {
  if (typeof v === "number") {
    if (v !== 0 && Math.abs(v) < 1) return String(Number(v.toPrecision(2)));
    const r = Math.abs(v) >= 100 ? Math.round(v) : Math.round(v * 100) / 100;
    return r.toLocaleString("en-GB").replace(/,/g, " ");
  }
  return String(v);
}

function feature(name) { return state.model.features.find((f) => f.name === name); }

/** Replace the options of select `id` by `options` ([value, text, selected]). */
function setOptions(id, options) {
  $(id).replaceChildren(...options.map(([value, text, selected]) =>
    new Option(text, value, selected, selected)));
}

function showNotice(msg) { $("notice").textContent = msg; $("notice").hidden = !msg; }

// --- setup ---------------------------------------------------------------------------------
async function loadModels() {
  try {
    state.models = (await api("/v1/models")).models;
  } catch (e) {
    showError(e.message.startsWith("401") ? "This service needs an API token: enter it above." : e.message);
    return;
  }
  showError("");
  setOptions("model", state.models.map((m) => [m.id, m.id, false]));
  if (!state.models.length) {
    showNotice("This service serves no model, so there is nothing to explain.");
    $("submit").disabled = true;
    return;
  }
  await selectModel(state.models[0].id);
}

async function selectModel(id) {
  state.model = state.models.find((m) => m.id === id);
  const m = state.model;
  setOptions("method", m.methods.map((n) =>
    [n, n + (m.shift_params[n] ? " (robust)" : ""), n === m.default_method]));
  if (!m.methods.length) {
    showNotice(`No recourse method is served for model ${m.id}: none of the service's methods ` +
      "applies to it" + (m.has_training_data ? "." : " (it has no training data, which the " +
      "data-based methods need: serve it with a train.csv)."));
  } else {
    showNotice("");
  }
  $("submit").disabled = !m.methods.length;
  buildForm(m.features);
  state.applicants = (await api(`/v1/models/${encodeURIComponent(id)}/applicants`)).applicants;
  const picks = state.applicants.map((a, i) => [String(i), `applicant ${a.id}`, false]);
  setOptions("applicant", [["", state.applicants.length ? "— fill in by hand —"
    : "— none in the model's data: fill in by hand —", true], ...picks]);
  await loadPromises();
}

function fieldInput(f) {
  const id = "f-" + f.name;
  if (f.categories) {
    const select = el("select", { name: f.name, id });
    select.append(...f.categories.map((c) => new Option(String(c), String(c))));
    return select;
  }
  return el("input", { name: f.name, id, type: "number", step: f.kind === "integer" ? "1" : "any",
    min: f.lower, max: f.upper, required: "" });
}

function buildForm(features) {
  const fields = features.map((f) => {
    const bounds = f.categories ? (f.kind === "ordinal" ? "ordered: " + f.categories.join(" < ") : f.kind)
      : `${f.kind}, ${fmt(f.lower)} – ${fmt(f.upper)}`;
    const div = el("div", { className: "field" + (f.actionability === "immutable" ? " locked" : "") },
      el("label", { for: "f-" + f.name }, f.name + " ", fieldInput(f)),
      el("span", { className: "hint" }, bounds), " ");
    const act = { immutable: ["lock", "locked: options never change it"],
      increase: ["hint", "may only increase"], decrease: ["hint", "may only decrease"] }[f.actionability];
    if (act) div.append(el("span", { className: act[0] }, act[1]));
    return div;
  });
  $("fields").replaceChildren(...fields);
}

function fillForm(features) {
  for (const [k, v] of Object.entries(features)) {
    const input = $("f-" + k);
    if (input) input.value = String(v);
  }
}

function readForm() {
  const out = {};
  for (const f of state.model.features) {
    const raw = $("f-" + f.name).value;
    if (f.categories) {
      const match = f.categories.find((c) => String(c) === raw);
      out[f.name] = match === undefined ? raw : match;
    } else {
      out[f.name] = raw === "" ? null : Number(raw);
    }
  }
  return out;
}

// --- results -------------------------------------------------------------------------------
function changeWords(query, ce, changed) {
  const parts = changed.map((name) => {
    const f = feature(name);
    const a = query[name], b = ce[name];
    if (!f.categories) return `${b > a ? "raise" : "lower"} ${name} from ${fmt(a)} to ${fmt(b)}`;
    return `change ${name} from ${a} to ${b}`;
  });
  return parts.length ? parts.join("; ") + "; keep everything else" : "no change needed";
}

function cost(query, ce) {  // normalised ℓ1: numeric |Δ| / range, 1 per changed category
  let c = 0;
  for (const f of state.model.features) {
    if (f.categories) c += String(query[f.name]) === String(ce[f.name]) ? 0 : 1;
    else c += Math.abs(ce[f.name] - query[f.name]) / Math.max(f.upper - f.lower, 1e-12);
  }
  return c;
}

const badge = (kind, text) => el("span", { className: "badge " + kind }, text);

/** The certificates of one option, one paragraph each. */
function certParagraphs(delta, apas, family) {
  const out = [];
  if (delta) {
    const how = delta.decided_by ? ` (${delta.decided_by === "milp" ? "MILP" : delta.decided_by})` : "";
    if (delta.status === "robust") {
      out.push([badge("ok", "robust"), ` still approved by every model within ±${delta.delta} of today's weights; checked exactly${how}`]);
    } else if (delta.status === "not_robust") {
      out.push([badge("no", "not robust"), ` some model within ±${delta.delta} of today's weights rejects it; checked exactly${how}`]);
    } else {
      out.push([badge("maybe", String(delta.status)), ` not proven for ±${delta.delta} within the time limit`]);
    }
  }
  if (apas && apas.delta_max === 0) {
    out.push(["sampled models with the smallest weight changes tested already reject it (APΔS)"]);
  } else if (apas && apas.delta_max !== null && apas.delta_max !== undefined) {
    out.push([`with ${apas.alpha * 100}% confidence, at least ${apas.R * 100}% of models within ±${fmt(apas.delta_max)} of today's weights still approve it (sampled test, APΔS)`]);
  }
  if (family) {
    const k = Math.round(family.vr * family.n_models);
    out.push([`approved by ${k} of ${family.n_models} retrained versions of the model (vr = ${family.vr.toFixed(2)})`]);
  }
  return out.map((parts) => el("p", { className: "cert" }, ...parts));
}

function optionCard(o, i, targetName) {
  const card = el("article", { className: "card" },
    el("h3", {}, `Option ${i + 1} `, el("small", {}, `(${o.method})`), " ",
      badge(o.valid ? "ok" : "no", o.valid ? targetName + " by today's model" : "not " + targetName)),
    el("p", { className: "what" }, changeWords(o.query, o.ce, o.changed)),
    el("p", { className: "cost" }, `cost ${o.cost.toFixed(3)} (normalised ℓ1 over ${o.changed.length} ` +
      `change${o.changed.length === 1 ? "" : "s"})`),
    ...certParagraphs(o.delta, o.apas, o.family));
  card.dataset.counterfactual = JSON.stringify(o.ce);
  card.dataset.method = o.method;
  return card;
}

/** Why no option is shown: each response's status and message, as text. */
function noOptionMessage(responses) {
  const why = responses.map((resp) => {
    const it = resp.items[0];
    return `${resp.method}: status ${it.status}${it.message ? " — " + it.message : ""}`;
  });
  return el("p", { className: "error", id: "no-option" },
    "No option found. " + why.join("; ") + ".");
}

function showResult(query, responses) {
  const target = responses[0].target_class;
  const names = state.model.class_names;
  const item0 = responses[0].items[0];
  const p = item0.decision ? item0.decision.probability[target] : null;
  const decided = item0.decision ? names[item0.decision.class] : "?";
  $("decision").textContent = `The model's decision: ${decided}` +
    (p === null ? "" : ` (probability of ${names[target]}: ${(p * 100).toFixed(1)}%).`);
  const options = [];
  for (const resp of responses) {
    const it = resp.items[0];
    (it.counterfactuals || []).forEach((ce, k) => {
      if (options.length >= 5) return;
      if (options.some((o) => JSON.stringify(o.ce) === JSON.stringify(ce))) return;
      const certs = it.certificates || {};
      options.push({ method: resp.method, query, ce, changed: it.changed[k], valid: it.valid[k],
        delta: (certs.delta || [])[k], apas: (certs.apas || [])[k], family: (certs.family || [])[k],
        cost: cost(query, ce) });
    });
  }
  $("cards").replaceChildren(...(options.length ? options.map((o, i) => optionCard(o, i, names[target]))
    : [noOptionMessage(responses)]));
  drawChart(options);
  $("result").hidden = false;
}

function drawChart(options) {
  const svg = $("chart"), W = 560, H = 260, L = 55, B = 40;
  const pts = options.filter((o) => o.apas && o.apas.delta_max !== null && o.apas.delta_max !== undefined);
  if (!pts.length) {
    svg.replaceChildren(svgEl("text", { x: 20, y: 30 }, "no robustness figures to compare"));
    return;
  }
  const xmax = Math.max(...pts.map((o) => o.cost)) * 1.15 || 1;
  const ymax = Math.max(...pts.map((o) => o.apas.delta_max)) * 1.15 || 1;
  const X = (v) => L + (v / xmax) * (W - L - 15), Y = (v) => H - B - (v / ymax) * (H - B - 15);
  const parts = [
    svgEl("line", { x1: L, y1: H - B, x2: W - 10, y2: H - B, stroke: "#333" }),
    svgEl("line", { x1: L, y1: 10, x2: L, y2: H - B, stroke: "#333" }),
    svgEl("text", { x: (W + L) / 2, y: H - 8, "text-anchor": "middle", "font-size": 12 }, "cost (normalised ℓ1)"),
    svgEl("text", { x: 14, y: (H - B) / 2, "font-size": 12, transform: `rotate(-90 14 ${(H - B) / 2})`,
      "text-anchor": "middle" }, "δ_max (APΔS)"),
    svgEl("text", { x: L - 5, y: Y(ymax / 1.15) + 4, "text-anchor": "end", "font-size": 10 }, fmt(ymax / 1.15)),
    svgEl("text", { x: X(xmax / 1.15), y: H - B + 14, "text-anchor": "middle", "font-size": 10 },
      (xmax / 1.15).toFixed(2)),
  ];
  options.forEach((o, i) => {
    if (!pts.includes(o)) return;
    const x = X(o.cost), y = Y(o.apas.delta_max);
    parts.push(svgEl("circle", { cx: x, cy: y, r: 6,
      fill: o.delta && o.delta.status === "robust" ? "#2e7d32" : "#c62828" }));
    parts.push(svgEl("text", { x: x + 9, y: y + 4, "font-size": 12 }, String(i + 1)));
  });
  svg.replaceChildren(...parts);
}

function showError(msg) { $("error").textContent = msg; $("error").hidden = !msg; }

async function submit(ev) {
  ev.preventDefault();
  showError("");
  const m = state.model, method = $("method").value, delta = Number($("delta").value);
  if (!m || !method) return;  // nothing served: the notice says why
  const query = readForm();
  const certify = { delta, apas: { alpha: 0.999, R: 0.995 }, time_limit_s: 10 };
  const params = m.shift_params[method] ? { [m.shift_params[method]]: delta } : {};
  const applicantId = $("applicant-id").value.trim() || null;  // the ledger's key for the applicant
  const requests = [{ items: [{ id: applicantId, features: query }], method, params,
    target_class: m.default_target_class, time_limit_s: 20, certify }];
  if ($("more").checked && method !== "nearest_neighbour" && m.methods.includes("nearest_neighbour")) {
    requests.push({ ...requests[0], method: "nearest_neighbour", params: { n_neighbours: 4 } });
  }
  $("submit").disabled = true; $("busy").hidden = false;
  try {
    const responses = await Promise.all(requests.map((r) =>
      api(`/v1/models/${encodeURIComponent(m.id)}/explain`, { method: "POST", body: JSON.stringify(r) })));
    state.lastCase = { model: { id: m.id, hash: m.hash }, applicant: query, requests, responses,
      exported: new Date().toISOString() };
    showResult(query, responses);
    if (applicantId) await loadPromises();  // the options just given are promises now
  } catch (e) {
    showError(e.message);
  } finally {
    $("submit").disabled = false; $("busy").hidden = true;
  }
}

// --- earlier promises (a service started with --ledger) --------------------------------------
/** What a promise asked for: each changed feature, from the applicant's value to the promised one. */
function promiseWords(p) {
  const parts = p.changed.map((name) => `${name}: ${fmt(p.applicant_row[name])} → ${fmt(p.promised_row[name])}`);
  return parts.length ? parts.join("; ") : "no change";
}

function promiseRow(p) {
  const today = p.honoured_by_served_model;
  const verdict = today === null ? badge("maybe", "unknown (another model's features)")
    : badge(today ? "ok" : "no", today ? "yes" : "no");
  const issuer = p.issued_by.slice(0, 12) + (p.issued_by_served_model ? " (today's model)" : "");
  const row = el("tr", { className: "promise" },
    el("td", {}, p.issued_at.slice(0, 10)), el("td", {}, p.method), el("td", {}, promiseWords(p)),
    el("td", {}, p.certificate.kind + (p.certificate.verdict ? ` (${p.certificate.verdict})` : "")),
    el("td", {}, issuer), el("td", { className: "honoured" }, verdict));
  row.dataset.promiseId = String(p.id);
  return row;
}

/** The applicant's earlier promises, each with today's model's verdict; hidden without an id
 * or when the service keeps no ledger (404). */
async function loadPromises() {
  const id = $("applicant-id").value.trim(), m = state.model;
  if (!id || !m) { $("promises").hidden = true; return; }
  let view;
  try {
    view = await api(`/v1/models/${encodeURIComponent(m.id)}/promises?applicant=${encodeURIComponent(id)}`);
  } catch (e) {
    $("promises").hidden = e.message.startsWith("404");
    $("promises-summary").textContent = e.message;
    $("promise-rows").replaceChildren();
    return;
  }
  const n = view.promises.length;
  $("promises-summary").textContent = n ? `Applicant ${view.applicant}: ${n} earlier promise${n === 1 ? "" : "s"}; ` +
    `today's model still honours ${view.honoured}, breaks ${view.broken}.`
    : `No earlier promise to applicant ${view.applicant}.`;
  $("promise-rows").replaceChildren(...view.promises.map(promiseRow));
  $("promises").hidden = false;
}

function exportCase() {
  const blob = new Blob([JSON.stringify(state.lastCase, null, 2)], { type: "application/json" });
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = "recourse-case.json";
  a.click();
  URL.revokeObjectURL(a.href);
}

$("model").addEventListener("change", (e) => selectModel(e.target.value));
$("applicant").addEventListener("change", (e) => {
  if (e.target.value === "") return;
  const a = state.applicants[Number(e.target.value)];
  fillForm(a.features);
  $("applicant-id").value = String(a.id);
  loadPromises();
});
$("applicant-id").addEventListener("change", loadPromises);
$("token-form").addEventListener("submit", (e) => e.preventDefault());
$("token").addEventListener("change", (e) => {
  if (e.target.value === apiToken) return;  // unchanged: keep the form as filled in
  apiToken = e.target.value;
  loadModels();
});
$("applicant-form").addEventListener("submit", submit);
$("export").addEventListener("click", exportCase);
$("print").addEventListener("click", () => window.print());
loadModels();
