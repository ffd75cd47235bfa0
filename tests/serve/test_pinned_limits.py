"""The item limit at its edge, on the live server (``--max-items 20``): exactly 20 items are
accepted and answered item by item, 21 are refused with 422 before any solver work — for
explain (``items``) and certify (``counterfactuals``)."""

from __future__ import annotations

LIMIT = 20  # the main test server's --max-items (tests/serve/conftest.py)


def _items(applicants, n):
    return [{"id": f"i{k}", "features": applicants[k % len(applicants)]["features"]} for k in range(n)]


def test_explain_takes_exactly_the_item_limit_and_refuses_one_more(server, applicants):
    with server.client() as c:
        ok = c.post("/v1/models/loan/explain",
                    json={"items": _items(applicants, LIMIT), "method": "nearest_neighbour"})
        assert ok.status_code == 200, ok.text[:500]
        assert [it["id"] for it in ok.json()["items"]] == [f"i{k}" for k in range(LIMIT)]
        over = c.post("/v1/models/loan/explain",
                      json={"items": _items(applicants, LIMIT + 1), "method": "nearest_neighbour"})
        assert over.status_code == 422
        err = over.json()["detail"][0]
        assert err["loc"] == ["body", "items"] and f"at most {LIMIT}" in err["msg"]


def test_certify_takes_exactly_the_item_limit_and_refuses_one_more(server, applicants):
    with server.client() as c:
        ok = c.post("/v1/models/loan/certify", json={"counterfactuals": _items(applicants, LIMIT)})
        assert ok.status_code == 200, ok.text[:500]
        assert len(ok.json()["items"]) == LIMIT
        over = c.post("/v1/models/loan/certify",
                      json={"counterfactuals": _items(applicants, LIMIT + 1)})
        assert over.status_code == 422
        err = over.json()["detail"][0]
        assert err["loc"] == ["body", "counterfactuals"] and f"at most {LIMIT}" in err["msg"]
