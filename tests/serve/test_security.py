"""Route security matrix of the live service (docs/serve.md, "Security"): every route, read from
``/openapi.json`` plus the page, ``/static``, ``/docs`` and ``/openapi.json`` themselves, against
credential variants, every HTTP verb and path tricks, with the status each must get. Every
request is refused (or answered) before any solver work: no test here runs a method.

Requests go out through :mod:`http.client`, which sends the path exactly as written (an HTTP
client library would normalise ``/v1/../v1/models`` before sending it). Each table row that
differs from what it expects is collected, so one failure lists every mismatch."""

from __future__ import annotations

import http.client
import json
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest

from .conftest import TOKEN

VERBS = ("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD")

#: the routes of /openapi.json open without a token; every other one must be under /v1
OPEN_API_ROUTES = {"/health": "GET", "/ready": "GET"}

#: routes outside the OpenAPI document, all open: path → the verbs they answer (200)
OPEN_OTHER = {"/": ("GET", "HEAD"), "/static/app.js": ("GET", "HEAD"),
              "/static/style.css": ("GET", "HEAD"), "/docs": ("GET", "HEAD"),
              "/openapi.json": ("GET", "HEAD")}

#: FastAPI's default documentation routes, not served (their pages load from a CDN)
REMOVED = ("/redoc", "/docs/oauth2-redirect")

#: every response carries these (header, value), whatever its status
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
                               "base-uri 'none'; form-action 'self'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
}


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


class Client:
    """One HTTP request per connection to the live server, the path sent verbatim; every reply
    is checked for :data:`SECURITY_HEADERS` (a reply without them is a mismatch)."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port
        self.missing_headers: list[str] = []

    def send(self, method: str, path: str, headers: dict[str, str] | None = None,
             body: bytes | None = None) -> Reply:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            headers = dict(headers or {})
            if body is not None:
                headers.setdefault("Content-Type", "application/json")
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            reply = Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            conn.close()
        wrong = {k: reply.headers.get(k) for k, v in SECURITY_HEADERS.items() if reply.headers.get(k) != v}
        if wrong:
            self.missing_headers.append(f"{method} {path} -> {reply.status}: {wrong}")
        return reply


@pytest.fixture(scope="module")
def client(server) -> Client:
    return Client(server.url)


@pytest.fixture
def http_client(client: Client):
    """The module's client, asserting after the test that every reply had the security headers."""
    client.missing_headers.clear()
    yield client
    assert not client.missing_headers, client.missing_headers


def _concrete(template: str) -> str:
    """A request path for an OpenAPI path template: the served model, an unknown job id."""
    return re.sub(r"\{(\w+)\}", lambda m: {"model_id": "loan", "job_id": "0" * 32}.get(m[1], "x"), template)


@pytest.fixture(scope="module")
def api_routes(client: Client) -> list[tuple[str, str, str]]:
    """(template, VERB, path) of every operation of /openapi.json."""
    spec = json.loads(client.send("GET", "/openapi.json").body)
    return [(t, verb.upper(), _concrete(t)) for t, ops in spec["paths"].items() for verb in ops]


def _body(verb: str) -> bytes | None:
    return b"{}" if verb in ("POST", "PUT", "PATCH") else None


def _bearer(value: str) -> dict[str, str]:
    return {"Authorization": value}


# --- which routes are open ---------------------------------------------------------------------
def test_every_api_route_but_health_and_ready_is_under_v1(api_routes):
    open_ones = {t: v for t, v, _ in api_routes if not t.startswith("/v1/")}
    assert open_ones == OPEN_API_ROUTES  # a new open route must be added here and to the docs


def test_open_routes_answer_without_a_token(http_client, api_routes):
    wrong = []
    routes = [(p, v) for p, v in OPEN_API_ROUTES.items()]
    routes += [(p, v) for p, verbs in OPEN_OTHER.items() for v in verbs]
    from robustce.serve.api_docs import swagger_ui_dir

    if swagger_ui_dir() is not None:
        routes += [("/docs/assets/swagger-ui.css", "GET"), ("/docs/assets/swagger-ui-bundle.js", "HEAD")]
    for path, verb in routes:
        reply = http_client.send(verb, path)
        if reply.status != 200 or (verb == "HEAD" and reply.body):
            wrong.append(f"{verb} {path} -> {reply.status}, {len(reply.body)} bytes")
    assert not wrong, wrong


# --- credentials -------------------------------------------------------------------------------
#: (name, headers, query string, accepted): the bearer scheme's name is case-insensitive
#: (RFC 7235 section 2.1); the token must match exactly and is read from the header only
CREDENTIALS = [
    ("none", {}, "", False),
    ("wrong token", _bearer("Bearer wrong-token-0123456789abcdef"), "", False),
    ("token in ?token=", {}, f"?token={TOKEN}", False),
    ("token in ?access_token=", {}, f"?access_token={TOKEN}", False),
    ("token in a cookie", {"Cookie": f"token={TOKEN}; access_token={TOKEN}"}, "", False),
    ("Basic scheme", _bearer(f"Basic {TOKEN}"), "", False),
    ("no scheme", _bearer(TOKEN), "", False),
    ("scheme glued to the token", _bearer(f"Bearer{TOKEN}"), "", False),
    ("empty token", _bearer("Bearer "), "", False),
    ("trailing junk", _bearer(f"Bearer {TOKEN}x"), "", False),
    ("trailing word", _bearer(f"Bearer {TOKEN} {TOKEN}"), "", False),
    ("token prefix", _bearer(f"Bearer {TOKEN[:-1]}"), "", False),
    ("other case token", _bearer(f"Bearer {TOKEN.upper()}"), "", False),
    ("Bearer", _bearer(f"Bearer {TOKEN}"), "", True),
    ("bearer", _bearer(f"bearer {TOKEN}"), "", True),
    ("BEARER", _bearer(f"BEARER {TOKEN}"), "", True),
    ("bEaReR", _bearer(f"bEaReR {TOKEN}"), "", True),
]


@pytest.mark.parametrize("name,headers,query,accepted", CREDENTIALS, ids=[c[0] for c in CREDENTIALS])
def test_every_v1_route_checks_the_bearer_token(http_client, api_routes, name, headers, query, accepted):
    """Refused: 401 with ``WWW-Authenticate: Bearer``. Accepted: past the check (the POST
    routes then refuse the empty body with 422, an unknown job is 404), never 401 or 5xx."""
    wrong = []
    for template, verb, path in api_routes:
        if not template.startswith("/v1/"):
            continue
        reply = http_client.send(verb, path + query, headers, _body(verb))
        if accepted:
            ok = reply.status not in (401, 403) and reply.status < 500
        else:
            ok = reply.status == 401 and reply.headers.get("www-authenticate") == "Bearer"
        if not ok:
            wrong.append(f"{verb} {path}{query} -> {reply.status} {reply.body[:120]!r}")
    assert not wrong, wrong


@pytest.mark.parametrize("route", ["explain", "certify", "jobs"])
def test_a_malformed_body_without_a_token_is_401_not_422(http_client, route):
    reply = http_client.send("POST", f"/v1/models/loan/{route}", {}, b"{not json")
    assert reply.status == 401, (reply.status, reply.body[:200])


def test_an_oversized_body_is_refused_before_the_token_check(http_client, server):
    reply = http_client.send("POST", "/v1/models/loan/explain", {}, b"x" * (300 * 1024))  # > 256 KiB
    assert reply.status == 413


# --- verbs -------------------------------------------------------------------------------------
@pytest.mark.parametrize("verb", VERBS)
def test_each_route_answers_only_its_verbs(http_client, api_routes, verb):
    """A verb a route does not declare is 405 (with ``Allow``), with a token or without: the
    method is matched before the token is checked. OPTIONS is 405 everywhere (no CORS: the API
    is not for other origins' pages); HEAD is answered by the page, /static, /docs and
    /openapi.json only. FastAPI's /redoc and /docs/oauth2-redirect are 404."""
    declared: dict[str, set[str]] = {}
    for _, v, path in api_routes:
        declared.setdefault(path, set()).add(v)
    for path, verbs in OPEN_OTHER.items():
        declared.setdefault(path, set()).update(verbs)
    wrong = []
    for path, verbs in declared.items():
        for headers in ({}, _bearer(f"Bearer {TOKEN}")):
            if verb in verbs:
                continue  # declared: the credential and open-route tests cover it
            reply = http_client.send(verb, path, headers, _body(verb))
            if reply.status != 405 or not reply.headers.get("allow"):
                wrong.append(f"{verb} {path} token={bool(headers)} -> {reply.status}")
    for path in REMOVED:
        reply = http_client.send(verb, path, {}, _body(verb))
        if reply.status != 404:
            wrong.append(f"{verb} {path} -> {reply.status}")
    assert not wrong, wrong


# --- path tricks -------------------------------------------------------------------------------
#: (path, status without a token, status with the token): paths are matched literally after
#: percent-decoding, with no dot-segment or slash normalisation and no trailing-slash redirect;
#: a percent-encoded path is the route it decodes to, with the same token check
PATH_TRICKS = [
    ("/v1/../v1/models", 404, 404),
    ("/v1/./models", 404, 404),
    ("//v1/models", 404, 404),
    ("/v1//models", 404, 404),
    ("/V1/models", 404, 404),
    ("/v1/Models", 404, 404),
    ("/v1/models/", 404, 404),
    ("/v1/models%2F", 404, 404),
    ("/v1/models;x", 404, 404),
    ("/v1/models/loan/", 404, 404),
    ("/v1/%6dodels", 401, 200),
    ("/%76%31/models", 401, 200),
    ("/v1/models/loan%2Fapplicants", 401, 200),
    ("http://127.0.0.1/v1/models", 401, 200),  # absolute-form request target
    ("/health/", 404, 404),
    ("/static/../app.py", 404, 404),
    ("/static/%2e%2e/app.py", 404, 404),
    ("/static/..%2fapp.py", 404, 404),
    ("/static/..%2f..%2fserve%2fapp.py", 404, 404),
    ("/static/%2e%2e%2f%2e%2e%2f__init__.py", 404, 404),
    ("/static//etc/passwd", 404, 404),
    ("/docs/assets/../../fastapi/__init__.py", 404, 404),
    ("/docs/assets/..%2f..%2ffastapi%2f__init__.py", 404, 404),
]


@pytest.mark.parametrize("path,without,with_token", PATH_TRICKS, ids=[p[0] for p in PATH_TRICKS])
def test_path_tricks_neither_bypass_the_token_nor_reach_files(http_client, path, without, with_token):
    got = (http_client.send("GET", path).status,
           http_client.send("GET", path, _bearer(f"Bearer {TOKEN}")).status)
    assert got == (without, with_token)
