"""Service behaviours the older tests left open (issue 47's mutants): the item limit is
inclusive — a request of exactly ``--max-items`` items is answered, one more is refused."""

from __future__ import annotations

#: the ``main`` test server's --max-items (tests/serve/conftest.py)
MAX_ITEMS = 20


def test_exactly_the_item_limit_is_answered_and_one_more_is_refused(server, applicants):
    items = [{"id": f"q{i}", "features": applicants[i % len(applicants)]["features"]}
             for i in range(MAX_ITEMS + 1)]
    body = {"method": "nearest_neighbour", "time_limit_s": 30}
    with server.client() as c:
        at_limit = c.post("/v1/models/loan/explain", json={**body, "items": items[:MAX_ITEMS]})
        assert at_limit.status_code == 200, at_limit.text
        assert [it["id"] for it in at_limit.json()["items"]] == [it["id"] for it in items[:MAX_ITEMS]]
        over = c.post("/v1/models/loan/explain", json={**body, "items": items})
        assert over.status_code == 422
        assert over.json()["detail"][0]["loc"] == ["body", "items"]
        assert f"at most {MAX_ITEMS}" in over.json()["detail"][0]["msg"]
