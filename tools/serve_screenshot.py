"""Regenerate docs/images/serve_page.png: start ``robustce serve`` (demo model) on a free
loopback port, open the page in Debian's chromium (Playwright), pick a rejected applicant,
ask for recourse and save a full-page screenshot.

Usage: python tools/serve_screenshot.py [--out docs/images/serve_page.png] [--chromium PATH]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "images" / "serve_page.png"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--applicant", type=int, default=1, help="position in the applicant picker")
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen([sys.executable, "-m", "robustce.cli", "serve", "--port", str(port),
                                 "--demo-dir", tmp], env=env)
        try:
            end = time.monotonic() + 180
            while True:
                try:
                    if httpx.get(url + "/ready", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > end or proc.poll() is not None:
                    raise SystemExit("the server did not start")
                time.sleep(0.3)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
                page = browser.new_page(viewport={"width": 1200, "height": 900})
                page.goto(url + "/")
                page.wait_for_selector(f"#applicant option[value='{args.applicant}']", state="attached")
                page.select_option("#applicant", str(args.applicant))
                page.click("#submit")
                page.wait_for_selector(".card", timeout=120_000)
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=args.out, full_page=True)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"screenshot: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
