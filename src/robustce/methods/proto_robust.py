"""``ProtoRobust`` (Proto-R, Jiang et al., AAAI 2023): the prototype-guided CE of Van Looveren
& Klaise (2021) — without their autoencoder — with the exact Δ-test in the loop.

Round r minimises, for every open query at once (torch, Adam; Wachter's batched search),

    c · ℓ(m_t(x′)) + β · ‖x′ − x‖₁ + ‖x′ − x‖₂² + θ · ‖x′ − proto_t(x)‖₂²,

where ℓ is the hinge on the target margin asking for ``tau_r + margin`` and proto_t(x) is the
mean of the ``k`` nearest training points the model puts in the target class (L2 on the mutable
columns; the candidates of :class:`~robustce.methods.NearestNeighbour`'s per-class index, one
KD-tree per class built once). Immutable columns are frozen and increase/decrease-only columns
projected during the search, so the prototype only guides; it need not itself be reachable (as
in alibi, whose prototypes ignore actionability). The first projected
point whose margin reaches ``tau_r`` is the round's CE; the margin loop (raise until Δ-robust,
bisect after an unreachable margin) is MILP-R's, :mod:`robustce.methods.margin_loop`.

Defaults are the authors' (``junqi-jiang/robust-ce-inn``, ``expnns/utilexp.py``, alibi
``CounterFactualProto``): θ = 10, β = 0.1, c_init = 10 (``lam_init``; ×10 per round without a CE,
3 c-steps), k = 20 (``k_type="mean"``), 1000 steps at lr 0.01. Their loop raises c and halves θ
until the INN test passes; ours raises the margin (the same loop as MILP-R and Wacht-R).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from robustce.errors import ValidationError
from robustce.methods.nearest_neighbour import NearestNeighbour
from robustce.methods.wachter_robust import WachterRobust
from robustce.validation import check_integer, check_number

__all__ = ["ProtoRobust"]


class ProtoRobust(WachterRobust):
    """Prototype-guided CE, margin raised until Δ-robust (Proto-R).

    Parameters
    ----------
    model, data : a ReLU network model and its training :class:`~robustce.data.Dataset`
        (required: the prototypes are training points).
    theta : weight θ of the prototype term (≥ 0).
    beta : weight β of the L1 term of the elastic-net distance (≥ 0).
    k : training points of the target class averaged into the prototype.
    lam_init, lam_schedule, max_lambda_steps : c (the prediction-loss weight): its start, its
        growth after a round without a CE, and the number of c-steps.
    max_iter, lr, loss, margin, check_every, init_noise, straight_through, distance_weights :
        the search (as :class:`~robustce.methods.Wachter`; ``distance_weights`` weights the L1
        term and the reported distance).
    tau, solver, shift, growth, max_rounds, slack, bisect_tol, minimal, refine_tol, tau_step,
    delta_time_limit, certifier :
        the margin loop, as :class:`~robustce.methods.WachterRobust`.
    target_class, time_limit, random_state, n_jobs, constraints : see :class:`Explainer`.

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    As :class:`~robustce.methods.WachterRobust` (``lambda`` is c), plus
    n_prototype : training points in the query's prototype (< k only when the class has
        fewer; 0: the model puts no training point in the target class — no prototype term).

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.ProtoRobust(model, train, shift=0.02, random_state=0).explain(rejected)
    >>> res.status.tolist()
    ['found', 'found', 'found']
    >>> shift = rc.robustness.ParameterShift(0.02)
    >>> bool(rc.robustness.is_delta_robust(model, res, shift, target_class=1).all())
    True
    """

    name: ClassVar[str] = "proto_robust"
    #: constraints: CEs that violate them are removed (the base class's revalidation) and
    #: counted per query (certificate column ``constraints_removed``)
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = (
        *WachterRobust.certificate_columns, "n_prototype")

    def __init__(self, model: Any, data: Any = None, *, theta: float = 10.0, beta: float = 0.1,
                 k: int = 20, lam_init: float = 10.0, lam_schedule: float = 10.0,
                 max_lambda_steps: int = 3, max_iter: int = 1000, lr: float = 0.01,
                 **kwargs: Any):
        self.theta = theta
        self.beta = beta
        self.k = k
        super().__init__(model, data, lam_init=lam_init, lam_schedule=lam_schedule,
                         max_lambda_steps=max_lambda_steps, max_iter=max_iter, lr=lr, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        if self.data is None:
            raise ValidationError("ProtoRobust needs the training data (data=) for its prototypes")
        check_number(self.theta, "theta", low=0)
        check_number(self.beta, "beta", low=0)
        check_integer(self.k, "k", low=1, high=max(len(self.data), 1))
        #: the prototype search: NearestNeighbour's per-class KD-tree index (L2)
        self.prototypes_ = NearestNeighbour(self.model, self.data, n_neighbours=self.k, norm="l2")
        self._protos: np.ndarray | None = None
        self._has_proto: np.ndarray | None = None
        self._rows: np.ndarray | None = None
        self._trees: dict[int, tuple[Any, np.ndarray]] = {}

    def prototypes(self, X: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per query (model space), the mean of the ``k`` training points of its target class
        nearest to it on the mutable columns (L2), with the query's own immutable values, and
        how many points that was (< k only for small classes; 0: the class is empty, and the
        prototype is the query itself)."""
        mutable = ~self.encoder.immutable_mask_
        protos = X.copy()
        count = np.zeros(len(X), dtype=np.int64)
        for t in np.unique(targets):
            rows = np.flatnonzero(targets == t)
            tree, cand = self._class_tree(int(t))
            if tree is None:
                continue
            k = min(self.k, len(cand))
            _, pos = tree.query(X[rows][:, mutable], k=k)
            pos = np.asarray(pos).reshape(len(rows), k)
            protos[np.ix_(rows, np.flatnonzero(mutable))] = cand[pos][:, :, mutable].mean(axis=1)
            count[rows] = k
        return protos, count

    def _class_tree(self, target: int) -> tuple[Any, np.ndarray]:
        """A KD-tree over the mutable columns of the candidates of ``target`` in
        :class:`NearestNeighbour`'s index (encoded, model-classified, de-duplicated; built once
        per class). Immutable values are not matched: the prototype guides the mutable columns
        only (its immutable columns are the query's)."""
        from scipy.spatial import cKDTree

        if target not in self._trees:
            cand = self.prototypes_.index(target).X
            mutable = ~self.encoder.immutable_mask_
            tree = cKDTree(cand[:, mutable]) if len(cand) and mutable.any() else None
            self._trees[target] = (tree, cand)
        return self._trees[target]

    def _prepare_batch(self, X: np.ndarray, targets: np.ndarray) -> None:
        protos, count = self.prototypes(X, targets)
        self._has_proto = count > 0
        self._protos = protos
        self._count = count

    def _prepare_rows(self, rows: np.ndarray) -> None:
        self._rows = rows

    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list:
        results = super()._explain_batch(X, targets)
        for r, c in zip(results, self._count, strict=True):
            r.certificate = {**(r.certificate or {}), "n_prototype": int(c)}
        return results

    def _penalty(self, var: Any, xa: Any, rows: np.ndarray) -> Any:
        """β·L1 + L2² + θ·‖x′ − proto‖² per row (``rows``: positions in this round's search)."""
        import torch

        batch = self._rows[rows]
        proto = torch.as_tensor(self._protos[batch], dtype=var.dtype)
        theta = torch.as_tensor(self.theta * self._has_proto[batch], dtype=var.dtype)
        diff = var - xa
        l1 = self.distance_.torch(var, xa)
        return (self.beta * l1 + (diff * diff).sum(dim=-1)
                + theta * ((var - proto) ** 2).sum(dim=-1))
