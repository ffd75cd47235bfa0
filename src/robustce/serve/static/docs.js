// The API docs at /docs: starts Swagger UI (served from /docs/assets) on /openapi.json, or,
// where Swagger UI is not installed, lists the routes of /openapi.json as text.
"use strict";

function startSwaggerUI() {
  window.ui = window.SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null,  // the default asks a validator on another site
    presets: [window.SwaggerUIBundle.presets.apis, window.SwaggerUIBundle.SwaggerUIStandalonePreset],
  });
}

async function listRoutes() {
  const list = document.getElementById("routes");
  try {
    const resp = await fetch("/openapi.json");
    if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}`);
    const spec = await resp.json();
    document.getElementById("docs-title").textContent = `${spec.info.title} ${spec.info.version}`;
    for (const [path, ops] of Object.entries(spec.paths)) {
      for (const [verb, op] of Object.entries(ops)) {
        const item = document.createElement("li");
        const code = document.createElement("code");
        code.textContent = `${verb.toUpperCase()} ${path}`;
        item.append(code, op.summary ? ` — ${op.summary}` : "");
        list.appendChild(item);
      }
    }
  } catch (e) {
    const err = document.getElementById("error");
    err.textContent = `could not read /openapi.json: ${e.message}`;
    err.hidden = false;
  }
}

if (typeof window.SwaggerUIBundle === "function") startSwaggerUI(); else listRoutes();
