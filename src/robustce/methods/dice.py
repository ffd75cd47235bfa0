"""``DiCE``: an adapter over ``dice-ml`` (Mothilal, Sharma & Tan, FAT* 2020), the diverse-set
baseline of Leofante & Potyka — measured on the same model and queries, not quoted.

DiCE searches in *model space*: it is given the encoded training data ([0, 1]^d, every column
treated as continuous, outcome = the training labels) and the robustce model itself (its
``predict_proba`` on encoded rows, through dice-ml's scikit-learn interface; for
``method="gradient"``, dice-ml's PyTorch interface in its documented set-up,
``func="ohe-min-max"``: DiCE optimises min-max-normalised rows and the torch module it is given
maps them back to the model's own inputs before the network and a sigmoid/softmax — on
[0, 1]-scaled training data that map is the identity, so DiCE's steps, clamps and MAD weights are
in the model's scaled units). Its CEs come back as encoded rows, and the base class projects
every one to a valid encoding and re-validates it by a forward pass, like every method's CEs.

Actionability: immutable features are left out of dice-ml's ``features_to_vary`` and
increase- / decrease-only features get a per-query ``permitted_range`` (``[x_j, 1]`` /
``[0, x_j]`` in model space), so DiCE searches among actionable CEs as every other method does
(``dice_params`` may set either itself).

The CEs returned are dice-ml's ``final_cfs_df``. Its post-hoc sparsity pass (``random`` and
``gradient``) is off by default: at the model-space precision the adapter sets (10 decimals, so
that dice-ml's rounding does not move CEs back across the boundary) it moves a feature by
10⁻¹⁰ per step, at most 10 000 steps per feature and CE — minutes per query for ``gradient``,
for changes below 10⁻⁶. ``dice_params={"posthoc_sparsity_param": 0.1}`` turns it back on, and
the sparse CEs are then returned.

Needs the optional extra: ``pip install 'robustce[dice]'`` (dice-ml; the adapter does not use
the lightgbm/xgboost packages dice-ml 0.12 installs, and runs without them). dice-ml draws
random numbers from numpy's and Python's global generators: the adapter seeds them from
``random_state`` for each query and restores the previous state.
"""

from __future__ import annotations

import contextlib
import io
import random
import warnings
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from robustce.errors import RobustCEError, ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer
from robustce.validation import check_choice, check_integer

__all__ = ["DiCE"]

METHODS = ("random", "genetic", "gradient", "kdtree")
_OUTCOME = "__robustce_class__"
_DECIMALS = 10


def _missing() -> str | None:
    try:
        import dice_ml  # noqa: F401
    except ImportError as exc:
        return f"DiCE needs the optional extra 'dice' (pip install 'robustce[dice]'): {exc}"
    return None


def _dice_ml() -> Any:
    reason = _missing()
    if reason is not None:
        raise RobustCEError(reason)
    import dice_ml

    return dice_ml


class _ProbaModel:
    """dice-ml's scikit-learn interface over a robustce model on encoded rows."""

    def __init__(self, model: Any):
        self.model = model

    def predict_proba(self, X: Any) -> np.ndarray:
        return self.model.predict_proba(np.asarray(X, dtype=np.float64))

    def predict(self, X: Any) -> np.ndarray:
        return self.model.predict(np.asarray(X, dtype=np.float64))


@contextlib.contextmanager
def _global_seed(seed: int) -> Iterator[None]:
    # dice-ml reads the legacy global generators; seed them here only, and restore them
    state, py_state = np.random.get_state(), random.getstate()  # noqa: NPY002
    np.random.seed(seed)  # noqa: NPY002
    random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)  # noqa: NPY002
        random.setstate(py_state)


class DiCE(Explainer):
    """Diverse counterfactual explanations by dice-ml, returned as :class:`Explanations`.

    Parameters
    ----------
    model, data : the classifier and its training :class:`~robustce.data.Dataset` (required).
    n_counterfactuals : int ≥ 1 — ``total_CFs`` asked from DiCE per query.
    method : "random", "genetic", "kdtree" or "gradient" (needs a differentiable model).
    dice_params : dict — further keyword arguments of ``generate_counterfactuals``
        (e.g. ``proximity_weight``, ``diversity_weight``); the defaults are dice-ml's.
    target_class, time_limit, random_state, n_jobs, constraints : see
        :class:`~robustce.methods.base.Explainer`. dice-ml has no time limit of its own.

    Certificate columns: ``n_returned`` — CEs DiCE returned before re-validation.
    Statuses: ``found``; ``not_found`` — DiCE returned no counterfactual (no infeasibility
    claim); ``error`` — dice-ml raised (its message is kept).

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.DiCE(model, train, random_state=0).explain(rejected)
    >>> bool((model.predict(res.counterfactuals[res.feature_names]) == 1).all())
    True
    """

    name: ClassVar[str] = "dice"
    #: constraints: CEs that violate them are removed (the base class's revalidation) and
    #: counted per query (certificate column ``constraints_removed``)
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = ("n_returned",)

    def __init__(self, model: Any, data: Any = None, *, n_counterfactuals: int = 5,
                 method: str = "random", dice_params: dict[str, Any] | None = None,
                 **kwargs: Any):
        self.n_counterfactuals = n_counterfactuals
        self.method = method
        self.dice_params = dice_params
        super().__init__(model, data, **kwargs)

    @classmethod
    def missing_dependency(cls) -> str | None:
        """The reason DiCE cannot run here (dice-ml not installed), or None."""
        return _missing()

    def _check_params(self) -> None:
        super()._check_params()
        if self.data is None:
            raise ValidationError("DiCE needs the training data (data=)")
        check_integer(self.n_counterfactuals, "n_counterfactuals", low=1)
        check_choice(self.method, "method", METHODS)
        if self.method == "gradient" and not self.model.differentiable:
            raise ValidationError("method='gradient' needs a differentiable model (an MLP)")
        if self.method == "gradient" and self.model.n_classes != 2:
            raise ValidationError("method='gradient' supports binary models only (dice-ml's "
                                  f"loss is binary), got {self.model.n_classes} classes")
        if self.dice_params is not None and not isinstance(self.dice_params, dict):
            raise ValidationError(f"dice_params must be a dict or None, got {self.dice_params!r}")
        self._dice_ml = _dice_ml()
        self._explainer: Any = None
        self._columns = [f"x{j}" for j in range(self.encoder.n_features_out_)]

    def _build(self) -> Any:
        if self._explainer is not None:
            return self._explainer
        dml = self._dice_ml
        X = self.encoder.transform(self.data.frame)
        frame = pd.DataFrame(X, columns=self._columns)
        frame[_OUTCOME] = self.data.y
        # dice-ml rounds each continuous column to the decimals of its mode (0.0 -> 1 decimal),
        # which moves many CEs back across the boundary; keep model-space precision instead
        d = dml.Data(dataframe=frame, continuous_features=list(self._columns), outcome_name=_OUTCOME,
                     continuous_features_precision={c: _DECIMALS for c in self._columns})
        if self.method == "gradient":
            m = dml.Model(model=self._torch_module(X), backend="PYT", func="ohe-min-max")
        else:
            m = dml.Model(model=_ProbaModel(self.model), backend="sklearn",
                          model_type="classifier")
        self._explainer = dml.Dice(d, m, method=self.method)
        return self._explainer

    def _torch_module(self, X: np.ndarray) -> Any:
        """The model as dice-ml's PyTorch interface takes it with ``func="ohe-min-max"`` (its
        documented set-up): a module on DiCE's min-max-normalised rows z. A fixed first layer
        maps z back to the model's own inputs, x = lo + z·(hi − lo) with lo, hi the training
        rows' column minima and maxima in model space (DiCE sends a constant column to 0);
        then the network's layers and a sigmoid (one logit) or softmax (two). On [0, 1]-scaled
        training data lo = 0, hi = 1 and the first layer is the identity."""
        import torch

        lo, hi = X.min(axis=0), X.max(axis=0)
        weights = [(np.diag(np.where(hi > lo, hi - lo, 0.0)), lo), *self.model.network().weights]
        layers: list[Any] = []
        with torch.no_grad():
            for i, (W, b) in enumerate(weights):
                lin = torch.nn.Linear(W.shape[1], W.shape[0])
                lin.weight.copy_(torch.as_tensor(W, dtype=torch.float32))
                lin.bias.copy_(torch.as_tensor(b, dtype=torch.float32))
                layers.append(lin)
                if 0 < i < len(weights) - 1:
                    layers.append(torch.nn.ReLU())
        # dice-ml feeds single rows (1-D tensors): normalise over the last axis
        layers.append(torch.nn.Sigmoid() if weights[-1][0].shape[0] == 1
                      else torch.nn.Softmax(dim=-1))
        module = torch.nn.Sequential(*layers).eval()
        for p in module.parameters():
            p.requires_grad_(False)
        return module

    def _actionability(self, x: np.ndarray, params: dict[str, Any]) -> None:
        """The schema's actionability as dice-ml's own constraints (unless ``dice_params``
        sets them): immutable columns are left out of ``features_to_vary``; an increase-only
        column gets the ``permitted_range`` [x_j, 1], a decrease-only one [0, x_j]. Without
        them DiCE moves immutable features and its CEs are dropped by the actionability check
        every method's CEs pass."""
        enc = self.encoder
        imm = np.asarray(enc.immutable_mask_, dtype=bool)
        if imm.any():
            params.setdefault("features_to_vary",
                              [c for c, m in zip(self._columns, imm, strict=True) if not m])
        ranges = {}
        for j in np.flatnonzero(enc.increasing_mask_):
            ranges[self._columns[j]] = [float(min(x[j], 1.0)), 1.0]
        for j in np.flatnonzero(enc.decreasing_mask_):
            ranges[self._columns[j]] = [0.0, float(max(x[j], 0.0))]
        if ranges:
            params.setdefault("permitted_range", ranges)

    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        exp = self._build()
        seed = int(self._rng().integers(2**31 - 1))
        query = pd.DataFrame(x[None, :], columns=self._columns)
        params = dict(self.dice_params or {})
        if self.method == "random":
            params.setdefault("random_seed", seed)
        self._actionability(x, params)
        if self.method in ("random", "gradient"):
            # the post-hoc sparsity pass (dice-ml's default 0.1) walks each feature back to the
            # query in steps of the column precision — 1e-10 here — at most 10 000 steps per
            # feature and CE (minutes per query for gradient): off unless asked for
            params.setdefault("posthoc_sparsity_param", None)
        sparse = params.get("posthoc_sparsity_param") is not None
        try:
            with _global_seed(seed), warnings.catch_warnings(), \
                    contextlib.redirect_stderr(io.StringIO()), \
                    contextlib.redirect_stdout(io.StringIO()):  # dice-ml's prints and bars
                warnings.simplefilter("ignore")
                out = exp.generate_counterfactuals(query, total_CFs=int(self.n_counterfactuals),
                                                   desired_class=int(target), verbose=False,
                                                   **params)
        except Exception as exc:  # dice-ml raises its own and plain exceptions
            name = type(exc).__name__
            if "no counterfactuals found" in str(exc).lower() or name == "UserConfigValidationException":
                return QueryResult("not_found", certificate={"n_returned": 0},
                                   message=f"dice-ml: {exc}")
            return QueryResult("error", certificate={"n_returned": 0},
                               message=f"dice-ml {name}: {exc}")
        ex = out.cf_examples_list[0]
        cfs = ex.final_cfs_df_sparse if sparse and ex.final_cfs_df_sparse is not None \
            else ex.final_cfs_df
        if cfs is None or len(cfs) == 0:
            return QueryResult("not_found", certificate={"n_returned": 0},
                               message="dice-ml returned no counterfactual")
        C = cfs[self._columns].to_numpy(dtype=np.float64)
        # projected into the query's box: a query value beyond the training range is kept
        if not (self.model.predict(self.encoder.project(C, *self.encoder.domain(x))) == target).any():
            # the gradient method returns its last iterates when none converged
            return QueryResult("not_found", certificate={"n_returned": int(len(C))},
                               message=f"dice-ml returned {len(C)} point(s), none in the "
                                       "target class")
        return QueryResult("found", C, {"n_returned": int(len(C))})
