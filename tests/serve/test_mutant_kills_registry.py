"""The served model's identity: the SHA-256 of its ``model.json`` when served with the class
saved in it; otherwise one identity per served favourable class — two servings of a model
saved *without* a favourable class, toward two different classes, never share a hash
(mutant ``served_hash_without_the_class_index``)."""

from __future__ import annotations

import hashlib
import itertools

from robustce.serve.registry import served_hash


def test_every_served_class_gets_its_own_identity(tmp_path):
    (tmp_path / "model.json").write_text('{"weights_sha256": "abc"}')
    digest = hashlib.sha256((tmp_path / "model.json").read_bytes()).hexdigest()
    assert served_hash(str(tmp_path), 1, 1) == digest
    hashes = {(saved, served): served_hash(str(tmp_path), saved, served)
              for saved in (None, 0, 1) for served in (0, 1, 2) if saved != served}
    assert len(set(hashes.values())) == 3  # one per served class, whatever was saved
    for (s1, c1), (s2, c2) in itertools.combinations(hashes, 2):
        assert (hashes[s1, c1] == hashes[s2, c2]) == (c1 == c2)
    assert digest not in hashes.values() and all(len(h) == 64 for h in hashes.values())
