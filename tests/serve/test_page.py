"""The case workers' page in a real headless browser (Debian's chromium driven by Playwright):
fill the form, submit, and check that the cards show counterfactuals the model accepts."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

CHROMIUM = os.environ.get("ROBUSTCE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]


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
    page.close()
