"""Build an adverse-action notice from a model, a declined applicant and the explanations of
one or more methods: principal reasons, one to three recourse options with costs and
certificates in plain language, and an audit record.

Options are ranked most durable first — proven Δ-robust (with ``shift``), then higher robust
validity vr (with ``family``), then cheaper (ℓ1 in model space) — among the ten cheapest
distinct valid CEs of all methods. The reasons are those of the *recommended* option (the
first);
see :mod:`robustce.notices.reasons` for the attribution. Protected features
(:attr:`Schema.protected <robustce.data.schema.Schema.protected>`) never appear as reasons,
and an option that changes one is dropped (methods keep them fixed: they are immutable).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from robustce.errors import ValidationError
from robustce.evaluation.metrics import delta_validity, proximity, raw_distance, sparsity
from robustce.explanations import _jsonable
from robustce.notices.reasons import (
    MAX_REASONS,
    Reason,
    check_recourse_possible,
    principal_reasons,
)
from robustce.notices.record import audit_record

__all__ = ["NOTICE_VERSION", "MAX_OPTIONS", "Notice", "RecourseOption", "notice", "plain_name"]

NOTICE_VERSION = "1.0"
MAX_OPTIONS = 3
_POOL = 10  # distinct candidate CEs ranked for durability


def plain_name(feature: str, labels: Mapping[str, str] | None = None) -> str:
    """The schema's name in plain words: ``labels[feature]``, else ``_``/``-`` as spaces."""
    if labels and feature in labels:
        return str(labels[feature])
    return feature.replace("_", " ").replace("-", " ").strip()


@dataclass
class RecourseOption:
    """One way to reach the favourable outcome.

    Attributes
    ----------
    method : the explainer that found it.
    changes : the changed features, each ``{"feature", "plain_name", "current", "required"}``.
    cost_l1_model : its ℓ1 distance from the applicant in model space.
    cost_l1_raw : its ℓ1 distance from the applicant in raw units.
    n_changes : the number of raw features it changes.
    certificates : how sure we are about it, in plain sentences for the applicant (the
        method's own certificate is in the notice's ``record["options"]``).
    reasons : its principal reasons, as the notice's ``reasons``.
    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> declined = test.frame[model.predict(test.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, train).explain(declined)
    >>> n = rc.notices.notice(model, declined.index[0], expl, seed=0)
    >>> option = n.options[0]
    >>> option.method, option.n_changes, option.cost_l1_raw
    ('milp_nearest', 1, 1.0)
    >>> option.changes
    [{'feature': 'housing', 'plain_name': 'housing', 'current': 'rent', 'required': 'own'}]
    """

    method: str
    changes: list[dict[str, Any]]
    cost_l1_model: float
    cost_l1_raw: float
    n_changes: int
    certificates: list[str]
    reasons: list[dict[str, Any]]


@dataclass
class Notice:
    """An adverse-action notice (``to_dict`` gives the JSON document, schema version
    :data:`NOTICE_VERSION`).

    Attributes
    ----------
    applicant_id : the applicant's query id.
    decision : the label the model gives the applicant.
    favourable_outcome : the label the options lead to.
    reasons : the principal reasons (feature, values, share of the decision), most weighty
        first.
    options : the options (:class:`RecourseOption`), most durable first.
    protected_features : the features never named as a reason nor changed.
    statement : the notice's plain-language statement.
    record : the audit record (model and schema hashes, methods, seed, versions, times).
    applicant : the applicant's raw values (protected features left out).
    missing_options : why fewer options than asked for are shown, in plain words ("" when
        all are).
    next_steps : what the applicant can do next.

    The applicant's text is ``statement``, the reasons, each option's changes and
    ``certificates``, ``missing_options`` and ``next_steps``: plain sentences without
    symbols. The solver's certificates are in ``record["options"]`` (for reviewers).

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> declined = test.frame[model.predict(test.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, train).explain(declined)
    >>> n = rc.notices.notice(model, declined.index[0], expl, seed=0)
    >>> n.applicant_id, n.decision, len(n.options), n.protected_features
    ('1', 'rejected', 1, [])
    >>> doc = n.to_dict()  # the JSON document
    >>> doc["kind"], doc["notice_version"] == rc.notices.NOTICE_VERSION
    ('robustce.adverse_action_notice', True)
    >>> sorted(doc["record"])[:4]
    ['created_at', 'methods', 'model_class', 'model_hash']
    """

    applicant_id: str
    decision: str
    favourable_outcome: str
    reasons: list[dict[str, Any]]
    options: list[RecourseOption]
    protected_features: list[str]
    statement: str
    record: dict[str, Any]
    applicant: dict[str, Any] = field(default_factory=dict)
    missing_options: str = ""
    next_steps: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = {"notice_version": NOTICE_VERSION, "kind": "robustce.adverse_action_notice"}
        out.update(asdict(self))
        # plain JSON values; NaN (e.g. a share of a zero margin change) becomes null
        return json.loads(json.dumps(_jsonable(out)), parse_constant=lambda _: None)


def _as_list(explanations: Any) -> list[Any]:
    if isinstance(explanations, Sequence) and not isinstance(explanations, str):
        out = list(explanations)
    else:
        out = [explanations]
    if not out:
        raise ValidationError("notice needs at least one Explanations object")
    return out


def _applicant_id(applicant: Any, expl: Any) -> Any:
    if isinstance(applicant, pd.DataFrame):
        if len(applicant) != 1:
            raise ValidationError(f"applicant must be one row, got {len(applicant)}")
        applicant = applicant.index[0]
    expl._check_query_id(applicant)
    return applicant


def _robustness(model: Any, C: np.ndarray, target: int, family: Any, shift: Any,
                time_limit: float) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per CE row of ``C``: vr over ``family`` (NaN without one), proven Δ-robust under
    ``shift`` (False without one), and the exact test's status ('' without one)."""
    vr = (family.validity(C, target).per_ce if family is not None
          else np.full(len(C), np.nan))
    if shift is None:
        return vr, np.zeros(len(C), dtype=bool), [""] * len(C)
    from robustce.robustness import ParameterShift, is_delta_robust

    if isinstance(shift, ParameterShift | int | float):  # the exact Δ-test, with its statuses
        robust, res = is_delta_robust(model, C, _as_shift(shift), target, return_result=True,
                                      time_limit=time_limit)
        return vr, np.asarray(robust, dtype=bool), [str(st) for st in res.status]
    # an EnsembleShift (trees) or any Certifier: robust or not, as delta_validity reads it
    robust = delta_validity(model, C, shift, target)
    return vr, robust, ["robust" if r else "not proven" for r in robust]


def _shift_words(shift: Any) -> str:
    """The shift set in plain words, for the applicant's sentence (one number at most)."""
    from robustce.robustness import ParameterShift

    if isinstance(shift, ParameterShift | int | float):
        return (f"our model is updated, with each of its parameters moving by up to "
                f"{_as_shift(shift).delta:g}")
    return "our model is updated within the tolerances listed in the appendix for reviewers"


def _shift_record(shift: Any) -> dict[str, Any]:
    """The shift set for the reviewers' record: its kind and sizes."""
    from robustce.robustness import ParameterShift

    if isinstance(shift, ParameterShift | int | float):
        s = _as_shift(shift)
        return {"kind": "ParameterShift", "delta": s.delta, "p": str(s.p), "biases": s.biases,
                "test": "exact MILP test"}
    sizes = {k: getattr(shift, k) for k in ("delta", "epsilon") if hasattr(shift, k)}
    return {"kind": type(shift).__name__, **sizes}


def _as_shift(shift: Any) -> Any:
    from robustce.robustness import ParameterShift

    return shift if isinstance(shift, ParameterShift) else ParameterShift(float(shift))


def _certificates(model: Any, target: int, family: Any, shift: Any, vr: float,
                  robust: bool) -> list[str]:
    """How sure we are about one option, in plain sentences for the applicant (no symbols:
    the solver's certificate goes to the record, :func:`_reviewer_entry`)."""
    label = model.class_names[target]
    out = [f"We checked that our current model gives '{label}' for your application with "
           "these changes."]
    if family is not None:
        agree = int(round(vr * len(family)))
        some = ("none of them gives" if agree == 0 else
                f"{agree} of them {'gives' if agree == 1 else 'give'}")
        out.append(f"We also trained {len(family)} other versions of our model on the same "
                   f"kind of data: {some} '{label}'{'' if agree == 0 else ' too'}.")
    if shift is not None:
        if robust:
            out.append(f"We have proven that the result stays '{label}' even if "
                       f"{_shift_words(shift)}.")
        else:
            out.append(f"We could not prove that the result stays '{label}' if "
                       f"{_shift_words(shift)}.")
    return out


def _reviewer_entry(index: int, method: str, cost: float, raw_cost: float, family: Any,
                    vr: float, shift: Any, robust: bool, status: str,
                    method_cert: Mapping[str, Any]) -> dict[str, Any]:
    """One option's technical certificate for the audit record and the reviewers' appendix:
    the method and its own certificate columns, costs, vr and the Δ-test's result."""
    entry: dict[str, Any] = {"option": index, "method": method, "cost_l1_model": cost,
                             "cost_l1_raw": raw_cost}
    if family is not None:
        entry["vr"] = float(vr)
        entry["family"] = {"protocol": family.protocol, "n_models": len(family)}
    if shift is not None:
        entry["shift"] = {**_shift_record(shift), "proven": bool(robust), "status": status}
    entry["method_certificate"] = {
        k: v for k, v in method_cert.items()
        if v is not None and not (isinstance(v, float) and np.isnan(v))}
    return entry


#: a method's status for one applicant, in plain words ("one search ..."; {label}: the
#: favourable outcome)
_STATUS_WORDS = {
    "not_found": "found no change that leads to '{label}'",
    "infeasible": "showed that no change of the kind it looks for leads to '{label}'",
    "timeout": "ran out of time",
    "no_robust_point": "found no change that is sure to hold if our model is updated",
    "error": "failed",
}
_COUNT_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def _count(n: int, noun: str) -> str:
    """``n`` and ``noun`` in words: "one search", "two searches", "7 changes"."""
    word = _COUNT_WORDS.get(n, str(n))
    if n == 1:
        return f"{word} {noun}"
    return f"{word} {noun}" + ("es" if noun.endswith(("s", "sh", "ch", "x")) else "s")


def _why_missing(statuses: list[str], n_shown: int, n_dropped: int, label: str) -> str:
    """Plain sentences on why fewer options than asked for are shown: what each search did
    (``statuses``: one per method), and how many changes found were left out."""
    parts = []
    by_status: dict[str, int] = {}
    for st in statuses:
        by_status[st] = by_status.get(st, 0) + 1
    for st, words in _STATUS_WORDS.items():
        if st in by_status:
            parts.append(f"{_count(by_status[st], 'search')} {words.format(label=label)}")
    if n_dropped:
        parts.append(f"{_count(n_dropped, 'change')} found {'was' if n_dropped == 1 else 'were'} "
                     "left out because "
                     f"{'it' if n_dropped == 1 else 'they'} would change a protected "
                     f"characteristic or no longer lead to '{label}'")
    if (n_shown and "found" in by_status) or not parts:
        parts.append(f"{'our search' if len(statuses) == 1 else 'the searches'} found no "
                     f"other, different change that leads to '{label}'")
    return " ".join(p[0].upper() + p[1:] + "." for p in parts)


def _reason_dict(r: Reason, labels: Mapping[str, str] | None) -> dict[str, Any]:
    return {"feature": r.feature, "plain_name": plain_name(r.feature, labels),
            "current": r.current, "required": r.required,
            "contribution": r.contribution, "share": r.share}


def notice(model: Any, applicant: Any, explanations: Any, *, family: Any = None,
           shift: Any = None, max_options: int = MAX_OPTIONS, max_reasons: int = MAX_REASONS,
           labels: Mapping[str, str] | None = None, seed: int | None = None,
           time_limit: float = 10.0) -> Notice:
    """The adverse-action notice of one declined applicant.

    Parameters
    ----------
    model : the fitted robustce model that made the decision.
    applicant : the applicant's ``query_id`` in ``explanations`` (or its one-row frame).
    explanations : one :class:`~robustce.Explanations` or several (one per method); the
        applicant's CEs of all of them are the candidate options.
    family : optional :class:`~robustce.models.ModelFamily` (robust validity vr per option).
    shift : optional :class:`~robustce.robustness.ParameterShift` or δ (exact Δ-test).
    max_options : 1–3 options, most durable first, then cheapest (see the module docstring).
    max_reasons : at most this many principal reasons (≤ 4).
    labels : plain names of features (default: the schema's names with spaces).
    seed : recorded in the audit record.
    time_limit : seconds per exact Δ-test.

    Returns
    -------
    Notice

    Raises
    ------
    ValidationError
        Unknown applicant, an applicant the model does not decline, bad ``max_options``.
    ProtectedFeatureError
        When a protected feature would be the only mutable one.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> declined = test.frame[model.predict(test.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, train).explain(declined)
    >>> robust = rc.methods.MILPRobust(model, train, shift=0.01).explain(declined)
    >>> n = rc.notices.notice(model, declined.index[0], [expl, robust], shift=0.01, seed=0)
    >>> n.decision, n.favourable_outcome
    ('rejected', 'approved')
    >>> [(r["feature"], r["current"]) for r in n.reasons]
    [('housing', 'rent'), ('income', 36984.99)]
    >>> n.reasons[0]["required"], round(n.reasons[1]["required"], -3)
    ('own', 165000.0)
    >>> [o.method for o in n.options]  # the option proven Δ-robust comes first
    ['milp_robust', 'milp_nearest']
    >>> print(n.options[0].certificates[1])
    We have proven that the result stays 'approved' even if our model is updated, with each of
    its parameters moving by up to 0.01.
    >>> n.record["options"][0]["shift"]["proven"]  # the solver's side, for reviewers
    True
    """
    started = datetime.now(UTC)
    if not 1 <= int(max_options) <= MAX_OPTIONS:
        raise ValidationError(f"max_options must be 1 to {MAX_OPTIONS}, got {max_options}")
    if not 1 <= int(max_reasons) <= MAX_REASONS:
        raise ValidationError(f"max_reasons must be 1 to {MAX_REASONS}, got {max_reasons}")
    expls = _as_list(explanations)
    enc = model.encoder
    schema = enc.schema
    check_recourse_possible(schema)
    qid = _applicant_id(applicant, expls[0])
    pos = expls[0].queries.index.get_loc(qid)
    x = expls[0].queries_encoded[pos]
    target = int(expls[0].target_class.loc[qid])
    pred = int(model.predict(x[None, :])[0])
    if pred == target:
        raise ValidationError(f"applicant {qid!r} already gets the favourable outcome "
                              f"{model.class_names[target]!s}; no adverse-action notice")
    protected_cols = np.zeros(len(x), dtype=bool)
    for blk in enc.blocks_:
        if schema[blk.name].protected:
            protected_cols[blk.slice] = True
    cands: list[tuple[float, str, np.ndarray, dict[str, Any]]] = []
    statuses = []
    n_dropped = 0
    for e in expls:
        e._check_query_id(qid)
        statuses.append(str(e.status.loc[qid]))
        rows = e.cf_positions(qid)
        if not len(rows):
            continue
        C = e.counterfactuals_encoded[rows]
        ok = (model.predict(C) == target) & np.all(np.abs(C[:, protected_cols]
                                                          - x[protected_cols]) <= 1e-9, axis=1)
        n_dropped += int((~ok).sum())
        cert = (e.certificates.loc[qid].to_dict() if len(e.certificates.columns) else {})
        for c in C[ok]:
            cands.append((float(proximity(x[None, :], c[None, :])[0]), e.method, c, cert))
    cands.sort(key=lambda t: t[0])
    distinct: list[tuple[float, str, np.ndarray, dict[str, Any]]] = []
    for cand in cands:  # the cheapest distinct CEs, a pool for the robustness ranking
        if not any(np.array_equal(cand[2], c[2]) for c in distinct):
            distinct.append(cand)
        if len(distinct) == _POOL:
            break
    options: list[RecourseOption] = []
    reviewers: list[dict[str, Any]] = []
    if distinct:
        vr, robust, st = _robustness(model, np.vstack([c[2] for c in distinct]), target,
                                     family, shift, time_limit)
        # most durable first: proven Δ-robust, then higher vr, then cheaper
        order = sorted(range(len(distinct)), key=lambda i: (
            not robust[i], -(0.0 if np.isnan(vr[i]) else vr[i]), distinct[i][0]))[:max_options]
        chosen = [distinct[i] for i in order]
        C = np.vstack([c[2] for c in chosen])
        X = np.repeat(x[None, :], len(C), axis=0)
        raw_cost = raw_distance(enc, X, C, "l1")
        n_changed = sparsity(enc, X, C)
        certs = [_certificates(model, target, family, shift, vr[i], robust[i]) for i in order]
        reviewers = [_reviewer_entry(k + 1, distinct[i][1], distinct[i][0], float(raw_cost[k]),
                                     family, vr[i], shift, robust[i], st[i], distinct[i][3])
                     for k, i in enumerate(order)]
        for i, (cost, method, c, _) in enumerate(chosen):
            reasons, _ = principal_reasons(model, x, c, target, max_reasons=len(schema))
            changes = [{"feature": r.feature, "plain_name": plain_name(r.feature, labels),
                        "current": r.current, "required": r.required} for r in reasons]
            options.append(RecourseOption(
                method=method, changes=changes, cost_l1_model=cost,
                cost_l1_raw=float(raw_cost[i]), n_changes=int(n_changed[i]),
                certificates=certs[i],
                reasons=[_reason_dict(r, labels) for r in reasons[:max_reasons]]))
    label_t = str(model.class_names[target])
    label_p = str(model.class_names[pred])
    if options:
        main = options[0].reasons
        statement = ("Your application was not approved. The principal reasons are listed below, "
                     "starting with the one that weighed most in the decision. Making the "
                     f"changes of option 1 would lead to '{label_t}'.")
        next_steps = ("If you can make the changes of one of the options, you may apply again. "
                      "If any of your values shown here is wrong, tell us and we will review "
                      "your application with the correct value.")
    else:
        main = []
        statement = ("Your application was not approved. We found no change to the things you "
                     f"can act on that would lead to '{label_t}'. "
                     + _why_missing(statuses, 0, n_dropped, label_t))
        next_steps = ("If your situation changes, you may apply again. If any of your values "
                      "shown here is wrong, tell us and we will review your application with "
                      "the correct value.")
    missing = ""
    if options and len(options) < max_options:
        shown = "Only one option is shown" if len(options) == 1 else (
            f"Only {_COUNT_WORDS.get(len(options), len(options))} options are shown")
        missing = (f"{shown}, although we looked for up to "
                   f"{_COUNT_WORDS.get(int(max_options), max_options)}. "
                   + _why_missing(statuses, len(options), n_dropped, label_t))
    raw = enc.inverse_transform(x[None, :]).iloc[0]
    applicant_values = {n: raw[n] for n in schema.names if not schema[n].protected}
    methods = [{"method": e.method, "params": e.meta.get("params", {}),
                "status": str(e.status.loc[qid])} for e in expls]
    record = audit_record(model, methods=methods, seed=seed, started_at=started)
    if family is not None:
        record["family"] = {"protocol": family.protocol, "n_models": len(family)}
    if shift is not None:
        record["shift_delta"] = float(getattr(shift, "delta", shift))
    record["options"] = reviewers
    return Notice(applicant_id=str(qid), decision=label_p, favourable_outcome=label_t,
                  reasons=main, options=options, protected_features=list(schema.protected),
                  statement=statement, record=record, applicant=applicant_values,
                  missing_options=missing, next_steps=next_steps)
