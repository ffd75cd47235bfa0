// robustce recourse page: plain JavaScript, no build step, everything served by the service.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { models: [], model: null, lastCase: null };

function token() { return sessionStorage.getItem("robustce-token") || ""; }

async function api(path, options = {}) {
  const headers = { "Content-Type": "application/json" };
  if (token()) headers.Authorization = "Bearer " + token();
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

// --- setup ---------------------------------------------------------------------------------
async function loadModels() {
  try {
    state.models = (await api("/v1/models")).models;
  } catch (e) {
    showError(e.message.startsWith("401") ? "This service needs an API token: enter it above." : e.message);
    return;
  }
  showError("");
  $("model").innerHTML = state.models.map((m) => `<option value="${m.id}">${m.id}</option>`).join("");
  await selectModel(state.models[0].id);
}

async function selectModel(id) {
  state.model = state.models.find((m) => m.id === id);
  const m = state.model;
  $("method").innerHTML = m.methods.map((n) =>
    `<option value="${n}" ${n === m.default_method ? "selected" : ""}>${n}${m.shift_params[n] ? " (robust)" : ""}</option>`).join("");
  buildForm(m.features);
  const list = (await api(`/v1/models/${id}/applicants`)).applicants;
  state.applicants = list;
  $("applicant").innerHTML = '<option value="">— fill in by hand —</option>' +
    list.map((a, i) => `<option value="${i}">applicant ${a.id}</option>`).join("");
}

function buildForm(features) {
  $("fields").innerHTML = "";
  for (const f of features) {
    const div = document.createElement("div");
    div.className = "field" + (f.actionability === "immutable" ? " locked" : "");
    let input;
    if (f.categories) {
      input = `<select name="${f.name}" id="f-${f.name}">` +
        f.categories.map((c) => `<option value="${c}">${c}</option>`).join("") + "</select>";
    } else {
      const step = f.kind === "integer" ? "1" : "any";
      input = `<input name="${f.name}" id="f-${f.name}" type="number" step="${step}" min="${f.lower}" max="${f.upper}" required>`;
    }
    const bounds = f.categories ? (f.kind === "ordinal" ? "ordered: " + f.categories.join(" < ") : f.kind)
      : `${f.kind}, ${fmt(f.lower)} – ${fmt(f.upper)}`;
    const act = { immutable: '<span class="lock">locked: options never change it</span>',
      increase: '<span class="hint">may only increase</span>',
      decrease: '<span class="hint">may only decrease</span>', free: "" }[f.actionability] || "";
    div.innerHTML = `<label for="f-${f.name}">${f.name} ${input}</label><span class="hint">${bounds}</span> ${act}`;
    $("fields").appendChild(div);
  }
}

function fillForm(features) {
  for (const [k, v] of Object.entries(features)) {
    const el = $("f-" + k);
    if (el) el.value = String(v);
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

function certWords(delta, apas, family) {
  const out = [];
  if (delta) {
    const how = delta.decided_by ? ` (${delta.decided_by === "milp" ? "MILP" : delta.decided_by})` : "";
    if (delta.status === "robust") {
      out.push(`<span class="badge ok">robust</span> still approved by every model within ±${delta.delta} of today's weights; checked exactly${how}`);
    } else if (delta.status === "not_robust") {
      out.push(`<span class="badge no">not robust</span> some model within ±${delta.delta} of today's weights rejects it; checked exactly${how}`);
    } else {
      out.push(`<span class="badge maybe">${delta.status}</span> not proven for ±${delta.delta} within the time limit`);
    }
  }
  if (apas && apas.delta_max === 0) {
    out.push("sampled models with the smallest weight changes tested already reject it (APΔS)");
  } else if (apas && apas.delta_max !== null && apas.delta_max !== undefined) {
    out.push(`with ${apas.alpha * 100}% confidence, at least ${apas.R * 100}% of models within ±${fmt(apas.delta_max)} of today's weights still approve it (sampled test, APΔS)`);
  }
  if (family) {
    const k = Math.round(family.vr * family.n_models);
    out.push(`approved by ${k} of ${family.n_models} retrained versions of the model (vr = ${family.vr.toFixed(2)})`);
  }
  return out.map((t) => `<p class="cert">${t}</p>`).join("");
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
      options.push({ method: resp.method, ce, changed: it.changed[k], valid: it.valid[k],
        delta: (certs.delta || [])[k], apas: (certs.apas || [])[k], family: (certs.family || [])[k],
        cost: cost(query, ce) });
    });
  }
  const cards = $("cards");
  cards.innerHTML = "";
  if (!options.length) {
    const it = responses[0].items[0];
    cards.innerHTML = `<p class="error">No option found (status ${it.status}${it.message ? ": " + it.message : ""}).</p>`;
  }
  options.forEach((o, i) => {
    const card = document.createElement("article");
    card.className = "card";
    card.dataset.counterfactual = JSON.stringify(o.ce);
    card.dataset.method = o.method;
    card.innerHTML = `<h3>Option ${i + 1} <small>(${o.method})</small> ` +
      `<span class="badge ${o.valid ? "ok" : "no"}">${o.valid ? names[target] + " by today's model" : "not " + names[target]}</span></h3>` +
      `<p class="what">${changeWords(query, o.ce, o.changed)}</p>` +
      `<p class="cost">cost ${o.cost.toFixed(3)} (normalised ℓ1 over ${o.changed.length} change${o.changed.length === 1 ? "" : "s"})</p>` +
      certWords(o.delta, o.apas, o.family);
    cards.appendChild(card);
  });
  drawChart(options);
  $("result").hidden = false;
}

function drawChart(options) {
  const svg = $("chart"), W = 560, H = 260, L = 55, B = 40;
  const pts = options.filter((o) => o.apas && o.apas.delta_max !== null);
  if (!pts.length) { svg.innerHTML = '<text x="20" y="30">no robustness figures to compare</text>'; return; }
  const xmax = Math.max(...pts.map((o) => o.cost)) * 1.15 || 1;
  const ymax = Math.max(...pts.map((o) => o.apas.delta_max)) * 1.15 || 1;
  const X = (v) => L + (v / xmax) * (W - L - 15), Y = (v) => H - B - (v / ymax) * (H - B - 15);
  let s = `<line x1="${L}" y1="${H - B}" x2="${W - 10}" y2="${H - B}" stroke="#333"/>` +
    `<line x1="${L}" y1="10" x2="${L}" y2="${H - B}" stroke="#333"/>` +
    `<text x="${(W + L) / 2}" y="${H - 8}" text-anchor="middle" font-size="12">cost (normalised ℓ1)</text>` +
    `<text x="14" y="${(H - B) / 2}" font-size="12" transform="rotate(-90 14 ${(H - B) / 2})" text-anchor="middle">δ_max (APΔS)</text>` +
    `<text x="${L - 5}" y="${Y(ymax / 1.15) + 4}" text-anchor="end" font-size="10">${fmt(ymax / 1.15)}</text>` +
    `<text x="${X(xmax / 1.15)}" y="${H - B + 14}" text-anchor="middle" font-size="10">${(xmax / 1.15).toFixed(2)}</text>`;
  options.forEach((o, i) => {
    if (!o.apas || o.apas.delta_max === null) return;
    s += `<circle cx="${X(o.cost)}" cy="${Y(o.apas.delta_max)}" r="6" fill="${o.delta && o.delta.status === "robust" ? "#2e7d32" : "#c62828"}"/>` +
      `<text x="${X(o.cost) + 9}" y="${Y(o.apas.delta_max) + 4}" font-size="12">${i + 1}</text>`;
  });
  svg.innerHTML = s;
}

function showError(msg) { $("error").textContent = msg; $("error").hidden = !msg; }

async function submit(ev) {
  ev.preventDefault();
  showError("");
  const m = state.model, method = $("method").value, delta = Number($("delta").value);
  const query = readForm();
  const certify = { delta, apas: { alpha: 0.999, R: 0.995 }, time_limit_s: 10 };
  const params = m.shift_params[method] ? { [m.shift_params[method]]: delta } : {};
  const requests = [{ items: [{ id: "applicant", features: query }], method, params,
    target_class: m.default_target_class, time_limit_s: 20, certify }];
  if ($("more").checked && method !== "nearest_neighbour" && m.methods.includes("nearest_neighbour")) {
    requests.push({ ...requests[0], method: "nearest_neighbour", params: { n_neighbours: 4 } });
  }
  $("submit").disabled = true; $("busy").hidden = false;
  try {
    const responses = await Promise.all(requests.map((r) =>
      api(`/v1/models/${m.id}/explain`, { method: "POST", body: JSON.stringify(r) })));
    state.lastCase = { model: { id: m.id, hash: m.hash }, applicant: query, requests, responses,
      exported: new Date().toISOString() };
    showResult(query, responses);
  } catch (e) {
    showError(e.message);
  } finally {
    $("submit").disabled = false; $("busy").hidden = true;
  }
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
  if (e.target.value !== "") fillForm(state.applicants[Number(e.target.value)].features);
});
$("token").addEventListener("change", (e) => {
  if (e.target.value === token()) return;  // unchanged: keep the form as filled in
  sessionStorage.setItem("robustce-token", e.target.value);
  loadModels();
});
$("applicant-form").addEventListener("submit", submit);
$("export").addEventListener("click", exportCase);
$("print").addEventListener("click", () => window.print());
loadModels();
