"""Promise rows as the ledger stores them, built from one option, from an ``Explanations``
object (every valid CE) or from an adverse-action notice (its options), and the time and JSON
helpers the ledger shares.

A row: ``applicant_id``, ``applicant_row`` and ``target_row`` (raw feature values),
``model_hash``, ``method``, ``target_class``/``target_label``, ``changed`` (the features
whose raw value differs), ``certificate_kind``/``certificate``, ``issued_at`` /
``expires_at`` (microseconds since the epoch, UTC).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from robustce.errors import ValidationError
from robustce.ledger.certificates import certificate_of, checked_certificate

__all__ = ["as_micros", "changed_features", "dumps", "from_micros", "now_micros", "plain",
           "promise_row", "promise_rows_of_explanations", "promise_rows_of_notice"]


def now_micros() -> int:
    return as_micros(datetime.now(UTC))


def as_micros(value: datetime | str | pd.Timestamp) -> int:
    """A time as microseconds since the Unix epoch (a naive time is UTC; ISO text works)."""
    try:
        ts = pd.Timestamp(value)
    except (ValueError, TypeError):
        raise ValidationError(f"not a time: {value!r} (give a datetime or ISO 8601 text)") from None
    if ts is pd.NaT:
        raise ValidationError(f"not a time: {value!r}")
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return int(ts.value // 1000)


def from_micros(value: int) -> datetime:
    return pd.Timestamp(int(value), unit="us", tz="UTC").to_pydatetime()


def plain(value: Any) -> Any:
    """A raw value as a JSON value (numpy scalars as Python ones, NaN as None)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12)
    return a == b


def changed_features(applicant_row: Mapping[str, Any], target_row: Mapping[str, Any]
                     ) -> list[str]:
    """The features of ``target_row`` whose value differs from the applicant's."""
    return [k for k, v in target_row.items() if not _same(applicant_row.get(k), v)]


def _model_of(model: Any) -> tuple[str, list[str] | None]:
    """(model hash, class names or None) of a robustce model or of a hash given as text."""
    if isinstance(model, str):
        return model, None
    from robustce.notices.record import model_hash

    return model_hash(model), [str(c) for c in model.class_names]


def promise_row(*, applicant_id: Any, applicant_row: Mapping[str, Any],
                target_row: Mapping[str, Any], model: Any, method: str, target_class: int,
                certificate: Mapping[str, Any] | None = None,
                issued_at: datetime | str | None = None,
                expires_at: datetime | str | None = None,
                _hash: tuple[str, list[str] | None] | None = None) -> dict[str, Any]:
    """One promise row (see the module docstring); ``model`` a robustce model or its hash."""
    digest, names = _hash or _model_of(model)
    a = {str(k): plain(v) for k, v in applicant_row.items()}
    t = {str(k): plain(v) for k, v in target_row.items()}
    cert = checked_certificate(certificate)
    k = int(target_class)
    issued = now_micros() if issued_at is None else as_micros(issued_at)
    expires = None if expires_at is None else as_micros(expires_at)
    if expires is not None and expires <= issued:
        raise ValidationError(f"expires_at {expires_at} is not after issued_at")
    return {"applicant_id": applicant_id, "applicant_row": a, "target_row": t,
            "model_hash": digest, "method": str(method), "target_class": k,
            "target_label": names[k] if names and 0 <= k < len(names) else None,
            "changed": changed_features(a, t), "certificate_kind": cert["kind"],
            "certificate": cert, "issued_at": issued, "expires_at": expires}


def _ids(expl: Any, applicant_ids: Sequence[Any] | Mapping[Any, Any] | None) -> dict[Any, Any]:
    qids = list(expl.query_ids)
    if applicant_ids is None:
        return {q: str(q) for q in qids}
    if isinstance(applicant_ids, Mapping):
        missing = [q for q in qids if q not in applicant_ids]
        if missing:
            raise ValidationError(f"applicant_ids has no id for the queries {missing[:5]}")
        return {q: applicant_ids[q] for q in qids}
    ids = list(applicant_ids)
    if len(ids) != len(qids):
        raise ValidationError(f"applicant_ids: {len(ids)} ids for {len(qids)} queries")
    return dict(zip(qids, ids, strict=True))


def promise_rows_of_explanations(model: Any, expl: Any,
                                 applicant_ids: Sequence[Any] | Mapping[Any, Any] | None,
                                 certificates: str | Mapping[str, Any], issued_at: Any,
                                 expires_at: Any) -> list[dict[str, Any]]:
    """One row per CE of ``expl`` that ``model`` puts in the query's target class (a
    forward pass of the encoded CEs, all at once)."""
    if not (certificates == "auto" or isinstance(certificates, Mapping)):
        raise ValidationError(f"certificates must be 'auto' or a dict, got {certificates!r}")
    ids = _ids(expl, applicant_ids)
    cf = expl.counterfactuals
    if not len(cf):
        return []
    features = list(expl.feature_names)
    targets = expl.target_class.loc[cf["query_id"]].to_numpy()
    valid = np.asarray(model.predict(expl.counterfactuals_encoded)) == targets
    queries = dict(zip(expl.query_ids, expl.queries[features].to_dict("records"), strict=True))
    certs = (expl.certificates.to_dict("index") if len(expl.certificates.columns) else {})
    method = expl.method
    digest = _model_of(model)
    issued = datetime.now(UTC) if issued_at is None else issued_at  # one time for all
    rows = []
    for qid, target, row, ok in zip(cf["query_id"], targets, cf[features].to_dict("records"),
                                    valid, strict=True):
        if not ok:
            continue
        cert = (certificate_of(certs.get(qid)) if certificates == "auto"
                else dict(certificates))
        rows.append(promise_row(applicant_id=ids[qid], applicant_row=queries[qid],
                                target_row=row, model=None, method=method,
                                target_class=int(target), certificate=cert,
                                issued_at=issued, expires_at=expires_at, _hash=digest))
    return rows


def _notice_certificate(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The certificate of one notice option from its reviewers' entry (``record["options"]``):
    the exact Δ-test the notice ran, else the method's own certificate; vr over a retrained
    family rides along."""
    shift = entry.get("shift")
    if shift and shift.get("kind") == "ParameterShift":
        cert: dict[str, Any] = {"kind": "delta", "delta": shift.get("delta"),
                                "p": shift.get("p"), "biases": shift.get("biases"),
                                "verdict": "robust" if shift.get("proven")
                                else str(shift.get("status") or "not proven")}
    elif shift and "epsilon" in shift:
        cert = {"kind": "delta_epsilon", "delta": shift.get("delta"),
                "epsilon": shift.get("epsilon"),
                "verdict": "robust" if shift.get("proven") else "not proven"}
    else:
        cert = certificate_of(entry.get("method_certificate"))
    if "vr" in entry:
        cert["vr"] = entry["vr"]
        cert["family"] = entry.get("family")
    return cert


def promise_rows_of_notice(model: Any, notice: Any, applicant_row: Mapping[str, Any],
                           expires_at: Any) -> list[dict[str, Any]]:
    """One row per option of a notice: the target row is the applicant's row with the
    option's changes; issued when the notice was made."""
    doc = notice.to_dict() if hasattr(notice, "to_dict") else dict(notice)
    digest, names = _model_of(model)
    record = doc.get("record") or {}
    if record.get("model_hash") not in (None, digest):
        raise ValidationError(f"notice {doc.get('applicant_id')}: made by model "
                              f"{record.get('model_hash')}, not by the model given ({digest})")
    label = str(doc["favourable_outcome"])
    if names is None or label not in names:
        raise ValidationError(f"the favourable outcome {label!r} is not a class of the model")
    target = names.index(label)
    entries = record.get("options") or []
    rows = []
    for k, option in enumerate(doc.get("options") or []):
        target_row = dict(applicant_row)
        for change in option["changes"]:
            target_row[change["feature"]] = change["required"]
        cert = _notice_certificate(entries[k]) if k < len(entries) else {"kind": "none"}
        rows.append(promise_row(applicant_id=doc["applicant_id"], applicant_row=applicant_row,
                                target_row=target_row, model=None, method=option["method"],
                                target_class=target, certificate=cert,
                                issued_at=record.get("created_at"), expires_at=expires_at,
                                _hash=(digest, names)))
    return rows
