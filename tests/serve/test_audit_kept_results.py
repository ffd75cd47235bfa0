"""The answers kept for a retry after a failed audit write: bounded in number and in time."""

from __future__ import annotations

from robustce.serve.kept_results import KeptResults


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_kept_answers_expire_and_the_oldest_go_first():
    clock = Clock()
    kept = KeptResults(max_kept=3, keep_s=10.0, clock=clock)
    for k in range(4):
        kept.keep(("holder", f"k{k}", "body"), k)
        clock.now += 1
    assert len(kept) == 3 and kept.get(("holder", "k0", "body")) is None  # over the bound
    assert kept.get(("holder", "k1", "body")) == 1
    assert kept.get(("other", "k1", "body")) is None  # another token holder
    assert kept.get(("holder", "k1", "other body")) is None  # the same key, another body
    clock.now = 11.5  # k1 (kept at 1) is past its 10 s, k2 (kept at 2) is not
    assert kept.get(("holder", "k1", "body")) is None and kept.get(("holder", "k2", "body")) == 2
    kept.discard(("holder", "k2", "body"))
    assert kept.get(("holder", "k2", "body")) is None and len(kept) == 1
