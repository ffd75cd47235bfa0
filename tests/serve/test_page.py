"""The case workers' page in a real headless browser (Debian's chromium driven by Playwright):
fill the form, submit, and check that the cards show counterfactuals the model accepts; a model
whose labels are HTML/script shows them as text and runs none of it; the page and ``/docs``
hold under the service's Content-Security-Policy and load nothing from elsewhere."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from .conftest import launch, wait_ready

CHROMIUM = os.environ.get("ROBUSTCE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]


#: records the page's Content-Security-Policy violations in window.__csp (run before its scripts)
CSP_WATCH = ("window.__csp = []; document.addEventListener('securitypolicyviolation', "
             "(e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed "
                                   "(pip install 'robustce[serve,dev]')")
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install -y chromium; .ci/run does)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def test_page_fills_form_submits_and_shows_accepted_options(browser, server, model, applicants,
                                                           tmp_path):
    page = browser.new_page(viewport={"width": 1200, "height": 1600})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    external: list[str] = []
    page.on("request", lambda req: external.append(req.url)
            if not req.url.startswith(server.url) else None)
    page.add_init_script(CSP_WATCH)
    page.goto(server.url + "/")
    page.fill("#token", server.token)  # the server requires a bearer token
    page.dispatch_event("#token", "change")
    page.wait_for_selector("#applicant option[value='0']", state="attached")  # models loaded
    schema = model.encoder.schema
    assert page.locator(".field.locked").count() == len(schema.immutable)  # age, prior_default
    assert page.locator("#method").input_value() == "milp_robust"
    applicant = applicants[1]["features"]
    for f in schema:  # type the applicant in, field by field
        if f.categories is not None:
            page.select_option(f"#f-{f.name}", str(applicant[f.name]))
        else:
            page.fill(f"#f-{f.name}", str(applicant[f.name]))
    page.click("#submit")
    page.wait_for_selector(".card, #error:not([hidden])", timeout=90_000)
    assert page.locator("#error").is_hidden(), page.inner_text("#error")
    cards = page.locator(".card")
    n = cards.count()
    assert 1 <= n <= 5
    ces = [json.loads(cards.nth(i).get_attribute("data-counterfactual")) for i in range(n)]
    frame = pd.DataFrame.from_records(ces)[schema.names]
    assert (model.predict(frame) == 1).all()  # every option shown is approved by the model
    assert cards.nth(0).get_attribute("data-method") == "milp_robust"
    first = cards.nth(0).inner_text()
    assert "keep everything else" in first and "checked exactly" in first
    assert "retrained versions of the model" in first  # the vr certificate in words
    assert "rejected" in page.inner_text("#decision")
    assert page.locator("#chart circle").count() >= 1
    with page.expect_download() as dl:
        page.click("#export")
    case = json.loads(Path(dl.value.path()).read_text())
    assert case["applicant"] == {k: applicant[k] for k in schema.names}
    shot = tmp_path / "serve_page.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")
    assert not errors, errors
    assert not external, f"the page fetched from elsewhere: {external}"
    assert page.evaluate("window.__csp") == []  # the strict policy blocked nothing the page uses
    assert page.evaluate("() => [sessionStorage.length, localStorage.length]") == [0, 0]
    page.close()


# --- a model whose labels are HTML and script -----------------------------------------------
IMG = '<img src=x onerror="window.__pwned=1">'
SCRIPT = '"><script>window.__pwned=2</script>'
EVIL_NAME = 'plan<img src=y onerror="window.__pwned=3">'  # a feature name
APPROVED = 'approved<img src=z onerror="window.__pwned=4">'  # the favourable class's label
#: what the page's own markup holds: everything else in the DOM was built from data
DOM_CHECK = """() => ({
  pwned: window.__pwned === undefined ? null : window.__pwned,
  imgs: document.querySelectorAll('img').length,
  scripts: [...document.scripts].map((s) => s.getAttribute('src')),
  handlers: [...document.querySelectorAll('*')].flatMap((e) =>
    [...e.attributes].filter((a) => a.name.startsWith('on')).map((a) => e.tagName + ' ' + a.name)),
})"""


def _csp(headers: dict[str, str]) -> dict[str, str]:
    """The Content-Security-Policy header's directives, name → value."""
    policy = headers.get("content-security-policy", "")
    parts = [d.split(None, 1) + [""] for d in policy.split(";") if d.strip()]
    return {p[0]: p[1].strip() for p in parts}


@pytest.fixture(scope="module")
def evil_server(tmp_path_factory):
    """A served model (an MLP on a small frame) whose categorical labels, a feature name and the
    favourable class's label are HTML that runs script when parsed; approved iff the plan is the
    ``<img>`` label (so an option must change the plan to it)."""
    from robustce.data.dataset import from_frame
    from robustce.models import MLP

    rng = np.random.default_rng(0)
    plan = rng.choice([IMG, SCRIPT, "rent"], size=300)
    income = rng.uniform(0, 100, size=300).round(2)
    frame = pd.DataFrame({"income": income, EVIL_NAME: plan,
                          "decision": np.where(plan == IMG, APPROVED, "rejected")})
    data = from_frame(frame, "decision", positive=APPROVED, favourable=APPROVED)
    model = MLP(hidden_layers=(8,), epochs=60, lr=1e-2, random_state=0).fit(data)
    assert (model.predict(data.frame) == data.y).mean() > 0.95
    root = tmp_path_factory.mktemp("evil") / "model"
    model.save(root)
    data.frame.assign(_target=data.target.to_numpy()).to_csv(root / "train.csv", index=False)
    server = launch(root.parent, root, "evil", "--workers", "1")
    try:
        wait_ready(server)
        yield server
    finally:
        server.stop()


def test_page_shows_html_labels_as_text_and_runs_none(browser, evil_server):
    page = browser.new_page(viewport={"width": 1200, "height": 1400})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.add_init_script(CSP_WATCH)
    response = page.goto(evil_server.url + "/")
    csp = _csp(response.headers)
    assert csp.get("default-src") == "'self'" and csp.get("frame-ancestors") == "'none'", csp
    assert "script-src" not in csp and "unsafe" not in response.headers["content-security-policy"]
    page.fill("#token", evil_server.token)
    page.dispatch_event("#token", "change")
    page.wait_for_selector("#applicant option[value='0']", state="attached")  # the form is built
    plan = page.locator("#fields select")  # the one categorical feature
    assert plan.evaluate("(s) => s.id") == "f-" + EVIL_NAME
    assert plan.evaluate("(s) => [...s.options].map((o) => o.textContent)") == [SCRIPT, IMG, "rent"]
    assert EVIL_NAME in page.inner_text("#fields")  # the name, shown literally
    assert page.evaluate(DOM_CHECK) == {"pwned": None, "imgs": 0, "scripts": ["/static/app.js"],
                                        "handlers": []}
    # an explain: a rejected applicant whose option changes the plan to the <img> label
    page.select_option("#method", "nearest_neighbour")
    page.fill("#f-income", "40")
    plan.select_option(SCRIPT)
    page.click("#submit")
    page.wait_for_selector(".card, #error:not([hidden])", timeout=90_000)
    assert page.locator("#error").is_hidden(), page.inner_text("#error")
    what = page.locator(".card .what").first.inner_text()
    assert f"change {EVIL_NAME} from {SCRIPT} to {IMG}" in what
    assert f"probability of {APPROVED}:" in page.inner_text("#decision")
    assert page.locator(".card .badge").first.inner_text() == f"{APPROVED} by today's model"
    assert page.evaluate(DOM_CHECK) == {"pwned": None, "imgs": 0, "scripts": ["/static/app.js"],
                                        "handlers": []}
    # an applicant already approved: no option, and the page says why (the item's status)
    plan.select_option(IMG)
    page.click("#submit")
    page.wait_for_selector("#no-option", timeout=90_000)
    assert "nearest_neighbour: status already_target" in page.inner_text("#no-option")
    assert page.evaluate("window.__csp") == [] and not errors, (page.evaluate("window.__csp"), errors)
    page.close()


def test_api_docs_render_from_local_files_under_the_policy(browser, server):
    from robustce.serve.api_docs import swagger_ui_dir

    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    external: list[str] = []
    page.on("request", lambda req: external.append(req.url)
            if not req.url.startswith(server.url) else None)
    page.add_init_script(CSP_WATCH)
    response = page.goto(server.url + "/docs")
    assert _csp(response.headers).get("default-src") == "'self'"
    if swagger_ui_dir() is not None:  # Swagger UI from /docs/assets, started by /static/docs.js
        page.wait_for_selector(".opblock-summary-path", timeout=30_000)
        paths = page.locator(".opblock-summary-path").all_inner_texts()
    else:  # without fastapi-offline: the routes of /openapi.json as text
        page.wait_for_selector("#routes li", timeout=30_000)
        paths = [t.split(" ", 1)[1] for t in page.locator("#routes code").all_inner_texts()]
    assert any(p.replace("\u200b", "") == "/v1/models/{model_id}/explain" for p in paths), paths
    assert not external, f"/docs fetched from elsewhere: {external}"
    assert page.evaluate("window.__csp") == [] and not errors, (page.evaluate("window.__csp"), errors)
    page.close()


# --- an applicant's earlier promises (a service with --ledger) ------------------------------
def test_page_shows_earlier_promises_and_todays_verdict_as_text(browser, ledger_servers):
    """Promises made by v1 (a minimal-distance option and a Δ-robust one) to an applicant whose
    id is HTML; the page of v2 (retrained, same id) lists them with "yes"/"no" as v2's own
    ``predict`` on the promised rows says, and the id as text."""
    import uuid

    from robustce.models import load

    s = ledger_servers
    applicant = f'<img src=x onerror="window.__pwned=5">{uuid.uuid4().hex[:6]}'
    item = {"id": applicant, "features": s.applicants[0]}
    v2 = load(s.v2_dir / "model")
    expected = {}
    with s.v1.client() as c:
        for method, params in (("milp_nearest", {}), ("milp_robust", {"shift": 0.03})):
            r = c.post("/v1/models/loan/explain", json={"items": [item], "method": method,
                                                        "params": params, "time_limit_s": 20})
            assert r.status_code == 200, r.text
            out = r.json()["items"][0]
            rows = [ce for ce, ok in zip(out["counterfactuals"], out["valid"], strict=True) if ok]
            kept = v2.predict(pd.DataFrame(rows)[v2.encoder.schema.names]) == r.json()["target_class"]
            expected[method] = ["yes" if k else "no" for k in kept]
    assert {"yes", "no"} <= {v for vs in expected.values() for v in vs}  # v2 keeps one, breaks one
    page = s.v2.url + "/"
    tab = browser.new_page(viewport={"width": 1200, "height": 1400})
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.add_init_script(CSP_WATCH)
    tab.goto(page)
    tab.fill("#token", s.v2.token)
    tab.dispatch_event("#token", "change")
    tab.wait_for_selector("#applicant option[value='0']", state="attached")
    tab.fill("#applicant-id", applicant)
    tab.dispatch_event("#applicant-id", "change")
    tab.wait_for_selector("#promise-rows tr.promise")
    rows = tab.locator("#promise-rows tr.promise")
    shown: dict[str, list[str]] = {}
    for i in range(rows.count()):
        cells = rows.nth(i).locator("td").all_inner_texts()
        shown.setdefault(cells[1], []).append(cells[5])
        assert "(today's model)" not in cells[4]  # issued by v1
    assert {m: sorted(v) for m, v in shown.items()} == {m: sorted(v) for m, v in expected.items()}
    assert applicant in tab.inner_text("#promises-summary")  # the id, shown literally
    assert tab.evaluate(DOM_CHECK) == {"pwned": None, "imgs": 0, "scripts": ["/static/app.js"],
                                       "handlers": []}
    assert tab.evaluate("window.__csp") == [] and not errors, (tab.evaluate("window.__csp"), errors)
    tab.close()
