"""``RetrainRobust``: CEs that stay valid under the user's own retraining, with a (δ, α)
certificate (after BetaRCE, Stępka, Stefanowski, Lango, KDD 2025), for any model.

Per query, batch-first:

1. **Base CE.** A base method's CE ``c₀``: by default :class:`MILPNearest` where the model
   is open (the nearest CE, proven) and :class:`NearestNeighbour` otherwise (it needs only
   ``predict``: black boxes); or any explainer instance.
2. **Candidates.** Anchors are training points that the model *and* every one of the
   ``n_search`` search retrains (procedure models ``0 .. n_search − 1``) put in the target
   class; the ``n_anchors`` nearest to ``c₀`` give segments ``c₀ + s (a − c₀)``, ``s`` on a
   grid of ``n_steps`` steps in [0, ``reach``] (``s = 0``: ``c₀`` itself; ``s = 1``: the
   anchor, with the query's immutable values; beyond: deeper). Only mutable columns move;
   increase- / decrease-only columns are held on their side of the query; each candidate is
   projected to a valid encoding and taken through the raw round trip, so the point
   certified is the row the user receives.
3. **Screen, lowest cost first.** Candidates the model gives the target class (and that
   satisfy the constraints) are ordered by distance to the query; one ``predict`` per search
   model over all candidates of all queries keeps those that *every* search model accepts.
4. **Certify on fresh retrains, deeper until it holds.** The cheapest screened candidate
   is certified by :class:`~robustce.robustness.RetrainCertifier` on procedure models
   ``n_search .. n_search + max_models − 1`` — models the search never saw, so the
   certificate's confidence is not spent on the selection. If it is not certified, points
   further along its segment are tried (evenly spaced up to its end; ``max_tries`` in
   all): the error ``1 − confidence`` is split across the tries (each at ``1 − (1 −
   confidence) / max_tries``), so the returned CE's claim holds at ``confidence`` by the
   union bound. Queries are certified together (one ``predict`` per retrain over every
   query's candidate).

Statuses: ``found`` (a certified CE); ``not_found`` (the base method found none, or no
candidate passed the screen, or none of the tried ones was certified — the message says which
and the certificate columns hold the last verdict). Retrains are cached by the procedure
(reused by later ``explain`` calls) and counted in ``meta["retrain"]``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.spatial import cKDTree

from robustce.distance import NORMS, Distance, check_norm
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.explanations import Explanations, QueryResult
from robustce.methods.base import Explainer
from robustce.models.families.procedure import CHANGES, RetrainProcedure
from robustce.robustness.retrain import BOUNDS, RetrainCertifier
from robustce.validation import check_choice, check_integer, check_number

__all__ = ["RetrainRobust"]

_BASES = ("auto", "nearest_neighbour", "milp_nearest")


class RetrainRobust(Explainer):
    """CEs certified (δ, α)-robust to the user's retrain procedure (see the module docstring).

    Parameters
    ----------
    model, data : the classifier (any robustce model; black boxes included) and its training
        :class:`~robustce.data.Dataset` (required: anchors and, by default, the retrains).
    procedure : a :class:`~robustce.models.RetrainProcedure`, or None — then
        ``RetrainProcedure.from_model(model, data, change)`` (robustce refits the model; a
        black box or torch module needs your own procedure).
    change : the admissible change of the default procedure: ``"bootstrap"`` (default),
        ``"seed"``, ``"subsample"``; unused when ``procedure`` is given.
    share : the paper's δ — the share of retrained models that must keep the CE.
    confidence : the paper's α — the confidence of the claim.
    max_models : the certification budget (retrains per tried candidate, at most).
    n_looks : looks of the sequential test (see :class:`RetrainCertifier`).
    bound : ``"clopper_pearson"`` (default) or ``"beta"`` (the paper's posterior).
    n_search : retrains the screen uses (procedure models ``0 .. n_search − 1``).
    n_anchors : anchors per query.
    n_steps : grid steps per segment.
    reach : how far each segment runs, in multiples of the base-CE-to-anchor vector (default
        2: past the anchor, deeper into the region the search retrains agree on; points are
        projected into the valid domain).
    max_tries : screened candidates certified per query at most (the error is split).
    base : ``"auto"`` (default: ``MILPNearest`` where it can open the model — networks,
        linear models, tree ensembles — else ``NearestNeighbour``), ``"nearest_neighbour"``,
        ``"milp_nearest"`` or an explainer instance.
    norm : ``"l1"``, ``"l2"`` or ``"linf"`` — the cost (model space), lowest first.
    target_class, time_limit, random_state, n_jobs, constraints : see
        :class:`~robustce.methods.base.Explainer` (``random_state`` seeds the default
        procedure; ``n_jobs`` is its joblib workers; constraints filter the candidates).

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : the CE's cost to the query; base_distance : the base CE's.
    verdict : certified / refuted / undecided (the last candidate tried; NaN if none).
    share_lower : the lower bound on the share; k, n : retrains accepting it / asked.
    tries : candidates certified; screened : candidates that passed the screen.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("moons", n_samples=300, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> model = rc.models.wrap(LogisticRegression().fit(enc.transform(data.frame), data.y), enc)
    >>> queries = data.frame[model.predict(data.frame) == 0].head(3)
    >>> res = rc.methods.RetrainRobust(model, data, share=0.9, confidence=0.9,
    ...                                random_state=0).explain(queries)
    >>> res.status.tolist(), res.certificates["verdict"].tolist()
    (['found', 'found', 'found'], ['certified', 'certified', 'certified'])
    >>> res.certificates[["k", "n", "tries"]].values.tolist()   # k of n fresh retrains
    [[46, 46, 2], [98, 100, 1], [46, 46, 2]]
    """

    name: ClassVar[str] = "retrain_robust"
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "distance", "base_distance", "verdict", "share_lower", "k", "n", "tries", "screened")

    def __init__(self, model: Any, data: Any = None, *, procedure: Any = None,
                 change: str = "bootstrap", share: float = 0.9, confidence: float = 0.9,
                 max_models: int = 100, n_looks: int = 4, bound: str = "clopper_pearson",
                 n_search: int = 16, n_anchors: int = 30, n_steps: int = 12, reach: float = 2.0,
                 max_tries: int = 3, base: Any = "auto", norm: str = "l1", **kwargs: Any):
        self.procedure = procedure
        self.change = change
        self.share = share
        self.confidence = confidence
        self.max_models = max_models
        self.n_looks = n_looks
        self.bound = bound
        self.n_search = n_search
        self.n_anchors = n_anchors
        self.n_steps = n_steps
        self.reach = reach
        self.max_tries = max_tries
        self.base = base
        self.norm = norm
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        if self.data is None:
            raise ValidationError("RetrainRobust needs the training data (data=): anchors and "
                                  "retrains come from it")
        check_choice(self.change, "change", CHANGES[:3])
        check_number(self.share, "share", low=0, high=1, low_open=True, high_open=True)
        check_number(self.confidence, "confidence", low=0, high=1, low_open=True,
                     high_open=True)
        check_integer(self.n_search, "n_search", low=1, high=10_000)
        check_integer(self.n_anchors, "n_anchors", low=1, high=10_000)
        check_integer(self.n_steps, "n_steps", low=1, high=1_000)
        check_number(self.reach, "reach", low=0, high=10, low_open=True)
        check_integer(self.max_tries, "max_tries", low=1, high=100)
        check_choice(self.bound, "bound", BOUNDS)
        check_norm(self.norm, NORMS)
        #: the cost candidates are ordered by (model space)
        self.distance_ = Distance(self.norm, space="model")
        proc = self.procedure
        if proc is None:
            rs = self.random_state
            seed = int(rs) if rs is not None and not isinstance(rs, np.random.Generator) else (
                int(self._rng().integers(2**31 - 1)))
            proc = RetrainProcedure.from_model(self.model, self.data, self.change,
                                               random_state=seed, n_jobs=self.n_jobs)
        elif not isinstance(proc, RetrainProcedure):
            if not callable(proc):
                raise ValidationError(f"procedure must be a RetrainProcedure or a callable "
                                      f"retrain(seed) -> model, got {type(proc).__name__}")
            proc = RetrainProcedure(proc, encoder=self.encoder)
        #: the retrain procedure (models 0 .. n_search − 1 screen, the next ones certify)
        self.procedure_ = proc
        per_try = 1.0 - (1.0 - float(self.confidence)) / int(self.max_tries)
        #: the certificate of each try (its confidence: the overall one split across tries)
        self.certifier_ = RetrainCertifier(proc, share=self.share, confidence=per_try,
                                           max_models=self.max_models, n_looks=self.n_looks,
                                           bound=self.bound, first=int(self.n_search))
        if isinstance(self.base, Explainer):
            self.base_ = self.base
        else:
            check_choice(self.base, "base", _BASES)
            from robustce.methods.milp_nearest import MILPNearest
            from robustce.methods.nearest_neighbour import NearestNeighbour

            common = {"norm": self.norm, "constraints": self.constraints,
                      "time_limit": self.time_limit}
            self.base_ = None
            if self.base in ("auto", "milp_nearest"):
                try:
                    self.base_ = MILPNearest(self.model, self.data, **common)
                except UnsupportedModelError:
                    if self.base == "milp_nearest":
                        raise
            if self.base_ is None:  # "nearest_neighbour", or a model MILPNearest cannot open
                self.base_ = NearestNeighbour(self.model, self.data, **common)
        self._anchors: dict[int, tuple[np.ndarray, cKDTree | None]] = {}

    # --- parts --------------------------------------------------------------------------
    def search_models(self) -> list[Any]:
        """The screen's retrains (procedure models ``0 .. n_search − 1``)."""
        return self.procedure_.models(range(int(self.n_search)))

    def anchors(self, target: int) -> np.ndarray:
        """Training points (model space, unique) that the model and every search retrain
        put in ``target``."""
        return self._anchor_index(target)[0]

    def _anchor_index(self, target: int) -> tuple[np.ndarray, cKDTree | None]:
        t = int(target)
        if t not in self._anchors:
            X = np.unique(self.encoder.transform(self.data.frame), axis=0)
            ok = self.model.predict(X) == t
            for m in self.search_models():
                if ok.any():
                    ok[ok] &= np.asarray(m.predict(self._rows_for(m, X[ok]))) == t
            pool = X[ok]
            mut = ~self.action_masks()[0]
            tree = cKDTree(pool[:, mut]) if len(pool) else None
            self._anchors[t] = (pool, tree)
        return self._anchors[t]

    def _rows_for(self, m: Any, Z: np.ndarray) -> Any:
        """``Z`` (this model's space) in retrain ``m``'s space."""
        enc = getattr(m, "encoder", None)
        if enc is None or enc is self.encoder:
            return Z
        return enc.transform(self.encoder.inverse_transform(Z))

    def _candidates(self, x: np.ndarray, c0: np.ndarray, target: int
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Projected, round-tripped candidates on the segments from ``c0`` to its anchors,
        shape (segments × (n_steps + 1), d) in segment-major order, and each one's step."""
        pool, tree = self._anchor_index(target)
        imm, inc, dec = self.action_masks()
        mut = ~imm
        steps = np.linspace(0.0, float(self.reach), int(self.n_steps) + 1)
        if tree is None:
            ends = c0[None, :]
        else:
            k = min(int(self.n_anchors), len(pool))
            _, nbr = tree.query(c0[mut][None, :], k=k, p=self.distance_.minkowski_p)
            ends = pool[np.atleast_1d(np.asarray(nbr).reshape(-1))]
        C = c0[None, None, :] + steps[None, :, None] * (ends[:, None, :] - c0[None, None, :])
        C = C.reshape(-1, len(x))
        C[:, imm] = x[imm]
        C[:, inc] = np.maximum(C[:, inc], x[inc])
        C[:, dec] = np.minimum(C[:, dec], x[dec])
        C = self.encoder.project(C, *self.encoder.domain(np.repeat(x[None], len(C), axis=0)))
        return self.encoder.encode_decoded(C), np.tile(np.arange(len(steps)), len(ends))

    def _tries(self, rows: np.ndarray, step: np.ndarray, usable: np.ndarray) -> list[int]:
        """The candidates to certify, in order: the cheapest screened one (``rows[0]``), then
        points further along its segment, evenly up to its end (``max_tries`` at most; only
        usable ones — valid, actionable — are kept)."""
        if not len(rows):
            return []
        first = int(rows[0])
        s0 = int(step[first])
        n, m = int(self.n_steps), int(self.max_tries)
        out = [first]
        for r in range(1, m):
            j = first + int(round(r * (n - s0) / max(m - 1, 1)))
            if j != out[-1] and usable[j]:
                out.append(j)
        return out

    # --- the hook -------------------------------------------------------------------------
    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
        base = self.base_.explain(X, target_class=targets)
        pos, first = base.first_counterfactuals()
        c0 = {int(p): c for p, c in zip(pos, first, strict=True)}
        results: list[QueryResult | None] = [None] * len(X)
        cands: list[np.ndarray] = []
        owner: list[int] = []
        step_of: list[np.ndarray] = []
        for i, (x, t) in enumerate(zip(X, targets, strict=True)):
            if i not in c0:
                results[i] = QueryResult(
                    "not_found", certificate=self._empty(),
                    message=f"the base method found no CE ({base.status.iloc[i]}): "
                            f"{base.messages.iloc[i]}".rstrip(": "))
                continue
            C, st = self._candidates(x, c0[i], int(t))
            cands.append(C)
            step_of.append(st)
            owner += [i] * len(C)
        if not cands:
            return results  # type: ignore[return-value]
        C = np.vstack(cands)
        step = np.concatenate(step_of)
        own = np.asarray(owner, dtype=np.int64)
        ok = (self.model.predict(C) == targets[own]) & self.actionable(X[own], C)
        ok &= self._satisfies_constraints(X[own], C)
        hits = np.zeros(len(C), dtype=np.int64)
        live = np.flatnonzero(ok)
        for m in self.search_models() if len(live) else ():
            hits[live] += np.asarray(m.predict(self._rows_for(m, C[live]))) == targets[own[live]]
        screened = ok & (hits == int(self.n_search))
        cost = self.distance_.rowwise(C, X[own])
        queue: dict[int, list[int]] = {}
        for i in np.unique(own):
            rows = np.flatnonzero((own == i) & screened)
            queue[int(i)] = self._tries(rows[np.argsort(cost[rows], kind="stable")], step, ok)
        done: dict[int, tuple[int, dict[str, Any]]] = {}
        last: dict[int, dict[str, Any]] = {}
        tries = {i: 0 for i in queue}
        budget = float(self.time_limit) * len(queue)
        for r in range(int(self.max_tries)):
            todo = [i for i, q in queue.items() if i not in done and len(q) > r]
            if not todo:
                break
            rows = np.array([queue[i][r] for i in todo], dtype=np.int64)
            certs = self.certifier_.certify(self.model, C[rows], targets[own[rows]],
                                            time_limit=budget)
            for j, i in enumerate(todo):
                tries[i] += 1
                row = certs.certificate(j)
                last[i] = {"verdict": row["verdict"], "share_lower": row["share_lower"],
                           "k": int(row["k"]), "n": int(row["n"])}
                if row["verdict"] == "certified":
                    done[i] = (int(rows[j]), last[i])
        base_dist = self.distance_.rowwise(np.vstack([c0[i] for i in queue]),
                                           X[list(queue)])
        for (i, q), bd in zip(queue.items(), base_dist, strict=True):
            n_scr = int(((own == i) & screened).sum())
            cert = {**self._empty(), "base_distance": float(bd), "tries": tries[i],
                    "screened": n_scr, **last.get(i, {})}
            if i in done:
                row, _ = done[i]
                cert["distance"] = float(cost[row])
                results[i] = QueryResult("found", C[row][None, :], cert)
            elif not q:
                n_ok = int((own == i).sum())
                results[i] = QueryResult("not_found", certificate=cert, message=(
                    f"none of the {n_ok} candidates passed the screen (valid, and accepted by "
                    f"all {self.n_search} search retrains)"))
            else:
                results[i] = QueryResult("not_found", certificate=cert, message=(
                    f"none of the {tries[i]} screened candidate(s) tried was certified "
                    f"(share={self.share}, confidence={self.confidence}); the last was "
                    f"{last[i]['verdict']} with {last[i]['k']} of {last[i]['n']} retrains"))
        return results  # type: ignore[return-value]

    @staticmethod
    def _empty() -> dict[str, Any]:
        return {"distance": np.nan, "base_distance": np.nan, "verdict": None,
                "share_lower": np.nan, "k": 0, "n": 0, "tries": 0, "screened": 0}

    def explain(self, queries: Any, target_class: Any = None) -> Explanations:
        """See :meth:`Explainer.explain`; ``meta["retrain"]`` counts the retrains fitted for
        this call and names the models used."""
        fitted0, time0 = self.procedure_.n_fitted, self.procedure_.fit_time
        out = super().explain(queries, target_class)
        n_s = int(self.n_search)
        out.meta["retrain"] = {
            "procedure": self.procedure_.summary(), "n_fitted": self.procedure_.n_fitted - fitted0,
            "fit_time": self.procedure_.fit_time - time0, "n_cached": len(self.procedure_.cached),
            "search_models": [0, n_s], "certify_models": [n_s, n_s + self.certifier_.max_models],
            "share": self.share, "confidence": self.confidence, "bound": self.bound,
            "confidence_per_try": self.certifier_.confidence, "looks": list(self.certifier_.looks_)}
        return out
