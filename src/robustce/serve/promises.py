"""The service's ledger (``robustce serve --ledger URL``): the options it gives, recorded as
promises before they go out, and an applicant's earlier promises re-scored by the model
served now.

* :meth:`ServiceLedger.rows_of` — one promise row per counterfactual of an item with status
  ``found`` that the served model puts in the target class: the applicant key is the item's
  ``id`` (``REQUEST_ID:INDEX`` when the client gave none), the version is the served model's
  hash, the certificate is the one the answer carries (the method's own, else the exact
  Δ-test of ``certify``, else its APΔS δ_max; ``vr`` over the served family rides along);
* :meth:`ServiceLedger.record` — the rows written on a worker thread (off the event loop);
  a failure is a :class:`LedgerWriteError` (the route then withholds the answer: 503, kept
  for a retry, like a failed audit record);
* :meth:`ServiceLedger.view` — the applicant's promises, each with whether the served model
  still honours it (:func:`robustce.ledger.check.rescore`: the model's own ``predict`` on
  the promised raw row, as ``robustce ledger check`` does).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from robustce.errors import RobustCEError
from robustce.ledger import Ledger, certificate_of
from robustce.ledger.check import rescore
from robustce.ledger.promises import from_micros, promise_row

__all__ = ["LedgerWriteError", "ServiceLedger", "item_certificate"]


class LedgerWriteError(RobustCEError):
    """The promises of an answer could not be written to the ledger (nothing was)."""


def item_certificate(certs: dict[str, Any], k: int) -> dict[str, Any]:
    """The ledger certificate of an item's ``k``-th counterfactual from the certificates the
    answer carries (``{"method": {...}, "delta": [...], "apas": [...], "family": [...]}``)."""
    cert = certificate_of(certs.get("method") or None)
    delta = (certs.get("delta") or [None] * (k + 1))[k]
    apas = (certs.get("apas") or [None] * (k + 1))[k]
    if cert["kind"] == "none" and delta:
        cert = {"kind": "delta", "delta": delta.get("delta"), "p": delta.get("p"),
                "biases": delta.get("biases"), "verdict": str(delta.get("status"))}
    elif cert["kind"] == "none" and apas:
        cert = {"kind": "apas", "delta_max": apas.get("delta_max"), "alpha": apas.get("alpha"),
                "R": apas.get("R"), "n": apas.get("n"), "verdict": str(apas.get("status"))}
    family = (certs.get("family") or [None] * (k + 1))[k]
    if family:
        cert["vr"] = family.get("vr")
    return cert


def _iso(micros: Any) -> str | None:
    return None if micros is None or micros != micros else from_micros(int(micros)).isoformat()


class ServiceLedger:
    """The ledger at ``url``, opened once (a :class:`~robustce.ledger.LedgerError` line when
    it cannot be); ``hash_ids``: keep salted hashes of applicant ids, not the ids."""

    def __init__(self, url: str, hash_ids: bool = False):
        self.book = Ledger(url)
        self.url, self.hash_ids = self.book.url, hash_ids

    def close(self) -> None:
        self.book.close()

    def rows_of(self, m: Any, method: str, target: int, item_ids: Sequence[str | None],
                records: Sequence[dict[str, Any]], results: Sequence[dict[str, Any]],
                fallback: str, start: int = 0) -> list[dict[str, Any]]:
        """The promise rows of an answer's items (see the module docstring); an item without
        an id is kept as ``{fallback}:{start + i}``."""
        issued = datetime.now(UTC)  # one time for the whole answer
        digest = (m.hash, m.class_names)
        rows = []
        for i, (item_id, record, res) in enumerate(zip(item_ids, records, results, strict=True)):
            if res.get("status") != "found":
                continue
            key = item_id if item_id is not None else f"{fallback}:{start + i}"
            certs = res.get("certificates") or {}
            for k, (ce, ok) in enumerate(zip(res.get("counterfactuals") or [],
                                             res.get("valid") or [], strict=False)):
                if ok:
                    rows.append(promise_row(applicant_id=key, applicant_row=record,
                                            target_row=ce, model=None, method=method,
                                            target_class=target,
                                            certificate=item_certificate(certs, k),
                                            issued_at=issued, _hash=digest))
        return rows

    def _write(self, rows: list[dict[str, Any]]) -> list[int]:
        try:
            return self.book.record_rows(rows, keep_ids=not self.hash_ids, origin="serve")
        except Exception as exc:  # noqa: BLE001 - whatever the database said: not recorded
            raise LedgerWriteError(f"ledger {self.url}: the promises were not recorded "
                                   f"({type(exc).__name__}: {exc})") from None

    async def record(self, rows: list[dict[str, Any]]) -> list[int]:
        """Write ``rows`` in one transaction on a worker thread; their ids."""
        return await asyncio.to_thread(self._write, rows) if rows else []

    def view(self, m: Any, applicant: str, limit: int) -> dict[str, Any]:
        """The applicant's promises (newest first, at most ``limit``), each re-scored by the
        served model ``m``: ``honoured`` is None for a promise whose row lacks one of the
        model's features (made for another model)."""
        frame = self.book.applicant_promises(applicant, limit=limit)
        names = list(m.schema.names)
        rows = [json.loads(t) for t in frame["target_row"]]
        fits = [all(n in r for n in names) for r in rows]
        honoured: list[bool | None] = [None] * len(frame)
        if any(fits):
            _, _, by_model = rescore(m.model, frame[fits], self.url)
            at = [i for i, f in enumerate(fits) if f]
            for i, ok in zip(at, by_model, strict=True):
                honoured[i] = bool(ok)
        out = []
        for r, promised, ok in zip(frame.to_dict("records"), rows, honoured, strict=True):
            out.append({
                "id": int(r["id"]), "issued_at": _iso(r["issued_at"]),
                "expires_at": _iso(r["expires_at"]), "issued_by": r["model_hash"],
                "issued_by_served_model": r["model_hash"] == m.hash, "method": r["method"],
                "target_class": int(r["target_class"]), "target_label": r["target_label"],
                "applicant_row": json.loads(r["applicant_row"]), "promised_row": promised,
                "changed": json.loads(r["changed"]), "certificate": json.loads(r["certificate"]),
                "status": r["status"], "outstanding": bool(r["outstanding"]),
                "honoured_by_served_model": ok})
        return {"applicant": applicant, "model": {"id": m.id, "hash": m.hash},
                "promises": out,
                "honoured": sum(1 for p in out if p["honoured_by_served_model"] is True),
                "broken": sum(1 for p in out if p["honoured_by_served_model"] is False)}
