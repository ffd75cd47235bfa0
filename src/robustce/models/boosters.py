"""XGBoost and LightGBM classifiers as :class:`~robustce.models.boosting.AdditiveTrees`.

:func:`from_sklearn` hands an ``XGBClassifier`` or ``LGBMClassifier`` — bare, or the final step
of a ``Pipeline`` whose preprocessing it folds — to :func:`import_booster`, which reads the
booster's own dump and rebuilds every tree over robustce's model space, exactly:

* **XGBoost** (``get_booster().save_raw("json")``): a node sends a row left iff
  ``float32(z) < s`` with ``s`` the float32 split condition (XGBoost stores inputs as float32
  and compares strictly). That is ``float32(z) <= s⁻`` with ``s⁻`` the float32 just below ``s``,
  which :func:`~robustce.models.trees.float32_threshold` turns into a plain real-valued
  ``z <= t``. Leaf values carry the learning rate; the intercept (``base_score``, stored in
  probability space for ``binary:logistic`` since XGBoost 2) becomes the baseline logit.
  Objectives ``binary:logistic`` (logistic link) and ``multi:softprob`` / ``multi:softmax``
  (softmax over the per-class trees, ``tree_info`` naming each tree's class).
* **LightGBM** (``booster_.dump_model()``): numeric nodes send a row left iff ``z <= t`` in
  float64 (LightGBM widens every input to double); categorical nodes (``decision_type "=="``,
  the threshold a set of integer codes ``"1||3"``) send a row left iff its code is in the set —
  on a pandas ``category`` column the code is the level's position in the booster's
  ``pandas_categorical``, so the split becomes a set of one-hot levels. ``binary`` (logit =
  ``sigmoid`` × raw score) and ``multiclass`` (softmax); the initial score is already in the
  first trees' leaves; ``average_output`` (random-forest mode) divides by the number of
  iterations.

**Missing values.** robustce's model space has no NaN (schemas reject missing values), so the
view is exact on complete rows: a booster trained on data with NaNs imports, and every
complete row is routed as the booster routes it; the direction a missing value would take
(``default_left``) is not part of the view. A value the booster itself reads as missing —
XGBoost's ``missing`` when it is not NaN, LightGBM's ``zero_as_missing`` (``|z| <= 1e-35``) —
goes the default way; where that is against a split's threshold and valid rows can take the
value, the import is refused (out of the columns' range it is harmless).

Refused with :class:`~robustce.errors.UnsupportedModelError` naming the reason: regression,
ranking and other non-classification objectives, custom (callable) objectives, the ``dart``
booster, ``gblinear``, LightGBM linear trees, XGBoost native categorical splits, NaN or
infinite thresholds and leaf values (a categorical set that is not integer codes), and a
booster whose feature count or names differ from the columns it is given. An unfitted
booster raises :class:`~robustce.errors.NotFittedError`, as every unfitted estimator does in
:func:`~robustce.models.from_sklearn`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.data.schema import Schema
from robustce.errors import NotFittedError, UnsupportedModelError, ValidationError
from robustce.models.boosting import AdditiveTrees
from robustce.models.sklearn_import.imported import ImportedBoostedModel
from robustce.models.sklearn_import.preprocessing import (
    _Basis,
    _box_range,
    _data_parts,
    _fold_preprocessing,
)
from robustce.models.sklearn_import.raw_schema import _plain, _Roles, _schema_from
from robustce.models.sklearn_import.registry import (
    _class_names,
    _oracle,
    _warn_if_constant,
    register_final_importer,
)
from robustce.models.sklearn_import.splits import _mapped_tree, _SplitMap

__all__ = ["BoosterDump", "BoosterTree", "booster_view", "import_booster", "is_booster",
           "lightgbm_trees", "xgboost_trees"]

_XGB_OBJECTIVES = ("binary:logistic", "multi:softprob", "multi:softmax")
#: LightGBM's ``kZeroThreshold``: with ``missing_type "Zero"``, ``|z| <= 1e-35f`` is missing
_LGB_ZERO = float(np.float32(1e-35))


def is_booster(estimator: Any) -> bool:
    """Whether ``estimator`` comes from the ``xgboost`` or ``lightgbm`` package."""
    module = type(estimator).__module__.split(".")[0]
    return module in ("xgboost", "lightgbm")


@dataclass(frozen=True)
class BoosterTree:
    """One tree of a booster over the booster's own inputs ``z`` (before any mapping).

    Node ``i`` is a leaf iff ``left[i] == -1``. A numeric node sends a row left iff
    ``float32(z[feature]) <= threshold`` (``float32`` True) or ``z[feature] <= threshold``;
    a categorical node (``categories[i]`` not None) iff ``trunc(z[feature])`` is in the set."""

    feature: np.ndarray  # (n,) int64, -1 at leaves
    threshold: np.ndarray  # (n,) float64, nan at leaves and categorical nodes
    left: np.ndarray  # (n,) int64
    right: np.ndarray  # (n,) int64
    value: np.ndarray  # (n,) float64 leaf values (logit units)
    categories: tuple[frozenset[int] | None, ...]
    output: int  # the logit the tree adds to
    float32: bool


@dataclass(frozen=True)
class BoosterDump:
    """A booster's classifier as read from its dump: the trees over its own inputs, the
    baseline logits, and what the import checks against the columns it is given."""

    trees: list[BoosterTree]
    baseline: np.ndarray  # (n_logits,)
    n_features: int
    feature_names: list[str] | None  # None when fitted on an unnamed array
    pandas_categorical: list[list[Any]] | None  # LightGBM's levels of its category columns
    #: per input, an interval of values a split treats as *missing* and sends its default
    #: way, against its threshold (XGBoost's ``missing`` value, LightGBM's zero-as-missing):
    #: the view cannot express it, so the import refuses when the input can take such a value
    conflicts: dict[int, tuple[float, float]] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------
# XGBoost
# ----------------------------------------------------------------------------------------


def _xgb_dump(final: Any) -> dict[str, Any]:
    """The booster's JSON model (a separate function so tests can hand in altered dumps)."""
    return json.loads(bytes(final.get_booster().save_raw("json")).decode())


def _xgb_vector(text: Any) -> np.ndarray:
    """``base_score``: ``"5E-1"`` (XGBoost 2) or ``"[5E-1,...]"`` (XGBoost 3)."""
    s = str(text).strip().strip("[]")
    return np.array([float(v) for v in s.split(",") if v.strip()], dtype=np.float64)


def xgboost_trees(model: dict[str, Any], label: str, missing: float = np.nan) -> BoosterDump:
    """Parse an XGBoost JSON model (``save_raw("json")``) of a classifier. ``missing``: the
    value the booster reads as missing (the wrapper's ``missing``; NaN by default)."""
    learner = model["learner"]
    booster = learner["gradient_booster"]
    name = booster.get("name")
    if name == "dart":
        raise UnsupportedModelError(
            f"{label}: the 'dart' booster (dropout-weighted trees) is not supported; use 'gbtree'")
    if name != "gbtree":
        raise UnsupportedModelError(f"{label}: the {name!r} booster is not supported; use 'gbtree'")
    objective = learner["objective"]["name"]
    if objective not in _XGB_OBJECTIVES:
        kind = ("a ranking" if objective.startswith("rank:") else
                "a regression" if objective.startswith(("reg:", "count:", "survival:")) else "an")
        raise UnsupportedModelError(
            f"{label}: {kind} objective {objective!r} is not supported; supported: "
            f"{', '.join(_XGB_OBJECTIVES)}")
    param = learner["learner_model_param"]
    n_class = int(param.get("num_class", "0"))
    if int(param.get("num_target", "1")) != 1:
        raise UnsupportedModelError(f"{label}: multi-target models are not supported")
    n_logits = n_class if n_class > 2 else 1
    base = _xgb_vector(param["base_score"])
    if objective == "binary:logistic":
        p = float(base[0])
        if not 0.0 < p < 1.0:
            raise UnsupportedModelError(f"{label}: base_score {p} is not a probability")
        baseline = np.array([np.log(p) - np.log1p(-p)])
    else:
        baseline = np.broadcast_to(base, (n_logits,)).astype(np.float64)
    gbt = booster["model"]
    info = [int(k) for k in gbt["tree_info"]]
    m32 = np.float32(missing)
    conflicts: dict[int, tuple[float, float]] = {}
    trees = []
    for tree, k in zip(gbt["trees"], info, strict=True):
        left = np.asarray(tree["left_children"], dtype=np.int64)
        right = np.asarray(tree["right_children"], dtype=np.int64)
        cond = np.asarray(tree["split_conditions"], dtype=np.float32)
        if any(int(t) != 0 for t in tree.get("split_type", [])):
            raise UnsupportedModelError(
                f"{label}: XGBoost native categorical splits (enable_categorical) are not "
                "supported; one-hot encode the categories in the pipeline instead")
        if int(tree["tree_param"].get("size_leaf_vector", "1")) > 1:
            raise UnsupportedModelError(f"{label}: vector-leaf trees are not supported")
        leaf = left < 0
        if not np.isfinite(cond[~leaf]).all():
            raise UnsupportedModelError(f"{label}: a tree has a NaN or infinite split threshold")
        if not np.isfinite(cond[leaf]).all():
            raise UnsupportedModelError(f"{label}: a tree has a NaN or infinite leaf value")
        if np.isfinite(m32):  # float32(z) == missing goes the default way
            default = np.asarray(tree["default_left"], dtype=bool)
            feats = np.asarray(tree["split_indices"], dtype=np.int64)
            against = ~leaf & (default != (m32 < cond))
            around = (float(np.nextafter(m32, np.float32(-np.inf))),
                      float(np.nextafter(m32, np.float32(np.inf))))
            conflicts.update({int(j): around for j in feats[against]})
        # left iff float32(z) < s  ⟺  float32(z) <= the float32 just below s
        below = np.nextafter(cond, np.float32(-np.inf)).astype(np.float64)
        trees.append(BoosterTree(
            np.where(leaf, -1, np.asarray(tree["split_indices"], dtype=np.int64)),
            np.where(leaf, np.nan, below), left, right,
            np.where(leaf, cond.astype(np.float64), 0.0), (None,) * len(left), k, True))
    return BoosterDump(trees, baseline, int(param["num_feature"]), None, None, conflicts)


def _xgb_parse(final: Any, label: str) -> BoosterDump:
    if callable(getattr(final, "objective", None)):
        raise UnsupportedModelError(f"{label}: a custom (callable) objective is not supported")
    try:
        booster = final.get_booster()
    except Exception:  # xgboost raises sklearn's NotFittedError
        raise NotFittedError(f"{label} is not fitted") from None
    missing = getattr(final, "missing", np.nan)
    parsed = xgboost_trees(_xgb_dump(final), label, np.nan if missing is None else float(missing))
    # the scikit-learn wrapper predicts up to the best iteration whenever one is recorded
    per_round = max(1, len(parsed.trees) // max(1, booster.num_boosted_rounds()))
    try:
        best = final.best_iteration
    except AttributeError:
        best = None
    trees = parsed.trees if best is None else parsed.trees[:(int(best) + 1) * per_round]
    names = booster.feature_names
    return replace(parsed, trees=trees, feature_names=list(names) if names is not None else None)


# ----------------------------------------------------------------------------------------
# LightGBM
# ----------------------------------------------------------------------------------------


def _lgb_dump(final: Any) -> dict[str, Any]:
    """The booster's ``dump_model()`` (a function so tests can hand in altered dumps)."""
    return final.booster_.dump_model()


def lightgbm_trees(dump: dict[str, Any], label: str) -> BoosterDump:
    """Parse a LightGBM ``dump_model()`` of a binary or multi-class classifier."""
    objective = str(dump.get("objective", ""))
    head = objective.split(" ")[0]
    if head == "binary":
        sigmoid = 1.0
        for part in objective.split(" ")[1:]:
            if part.startswith("sigmoid:"):
                sigmoid = float(part.split(":", 1)[1])
        scale, n_logits = sigmoid, 1
    elif head == "multiclass":
        scale, n_logits = 1.0, int(dump["num_class"])
    else:
        kind = ("a ranking" if head in ("lambdarank", "rank_xendcg") else
                "a custom" if head in ("custom", "none", "") else
                "a one-vs-all" if head == "multiclassova" else "a regression")
        raise UnsupportedModelError(
            f"{label}: {kind} objective {objective!r} is not supported; supported: binary, "
            "multiclass")
    per_iter = int(dump.get("num_tree_per_iteration", n_logits))
    infos = dump["tree_info"]
    if dump.get("average_output"):
        scale /= max(1, len(infos) // per_iter)
    conflicts: dict[int, tuple[float, float]] = {}
    trees = [_lgb_tree(t["tree_structure"], i % per_iter, scale, label, conflicts)
             for i, t in enumerate(infos)]
    names = [str(n) for n in dump.get("feature_names", [])]
    return BoosterDump(trees, np.zeros(n_logits), int(dump["max_feature_idx"]) + 1, names,
                       dump.get("pandas_categorical"), conflicts)


def _lgb_tree(root: dict[str, Any], output: int, scale: float, label: str,
              conflicts: dict[int, tuple[float, float]]) -> BoosterTree:
    """Flatten a dumped tree: internal node ``split_index`` is node ``split_index``, leaf
    ``leaf_index`` node ``n_internal + leaf_index`` (so ``pred_leaf`` maps directly).
    Zero-as-missing splits that send zero against their threshold go into ``conflicts``."""
    internal: list[dict[str, Any]] = []
    leaves: list[dict[str, Any]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if "split_index" in node:
            internal.append(node)
            stack += [node["left_child"], node["right_child"]]
        else:
            leaves.append(node)
    n_int = len(internal)
    n = n_int + len(leaves)

    def index(node: dict[str, Any]) -> int:
        if "split_index" in node:
            return int(node["split_index"])
        return n_int + int(node.get("leaf_index", 0))

    feature = np.full(n, -1, dtype=np.int64)
    threshold = np.full(n, np.nan)
    left = np.full(n, -1, dtype=np.int64)
    right = np.full(n, -1, dtype=np.int64)
    value = np.zeros(n)
    cats: list[frozenset[int] | None] = [None] * n
    for node in leaves:
        if "leaf_coeff" in node or "leaf_const" in node:
            raise UnsupportedModelError(f"{label}: linear trees (linear_tree=True) are not supported")
        value[index(node)] = float(node["leaf_value"]) * scale
        if not np.isfinite(value[index(node)]):
            raise UnsupportedModelError(f"{label}: a tree has a NaN or infinite leaf value")
    for node in internal:
        i = index(node)
        feature[i] = int(node["split_feature"])
        left[i], right[i] = index(node["left_child"]), index(node["right_child"])
        if node["decision_type"] == "==":
            try:
                cats[i] = frozenset(int(v) for v in str(node["threshold"]).split("||"))
            except ValueError:
                raise UnsupportedModelError(
                    f"{label}: a categorical split's category set {node['threshold']!r} is not "
                    "a list of integer codes (NaN or corrupt)") from None
            continue
        if node["decision_type"] != "<=":
            raise UnsupportedModelError(
                f"{label}: decision type {node['decision_type']!r} is not supported")
        t = float(node["threshold"])
        if not np.isfinite(t):
            raise UnsupportedModelError(f"{label}: a tree has a NaN or infinite split threshold")
        if node.get("missing_type") == "Zero":
            # |z| <= 1e-35 goes the default way: a conflict where that is not the threshold's way
            agrees = t >= _LGB_ZERO if node.get("default_left") else t < -_LGB_ZERO
            if not agrees:
                conflicts[int(node["split_feature"])] = (-_LGB_ZERO, _LGB_ZERO)
        threshold[i] = t
    return BoosterTree(feature, threshold, left, right, value, tuple(cats), output, False)


def _lgb_parse(final: Any, label: str) -> BoosterDump:
    if callable(getattr(final, "objective", None)):
        raise UnsupportedModelError(f"{label}: a custom (callable) objective is not supported")
    try:
        booster = final.booster_
    except Exception:  # lightgbm raises its LGBMNotFittedError
        raise NotFittedError(f"{label} is not fitted") from None
    params = booster.params or {}
    boosting = str(params.get("boosting", getattr(final, "boosting_type", "gbdt")))
    if boosting == "dart" or getattr(final, "boosting_type", "gbdt") == "dart":
        raise UnsupportedModelError(
            f"{label}: the 'dart' booster is not supported; use boosting_type='gbdt'")
    if params.get("linear_tree") or getattr(final, "linear_tree", False):
        raise UnsupportedModelError(f"{label}: linear trees (linear_tree=True) are not supported")
    parsed = lightgbm_trees(_lgb_dump(final), label)
    names = parsed.feature_names
    if names is not None and names == [f"Column_{i}" for i in range(len(names))]:
        names = None  # fitted on an unnamed array
    return replace(parsed, feature_names=names)


# ----------------------------------------------------------------------------------------
# Mapping the trees to model space
# ----------------------------------------------------------------------------------------


class _BoosterSplits:
    """What :func:`~robustce.models.sklearn_import.splits._mapped_tree` asks of a split map, for a
    booster: numeric splits go through the pipeline fold (:class:`_SplitMap`); a categorical
    split (given as feature ``-1 − j`` and the index of its code set) becomes a set of levels
    of the one categorical feature input ``j`` is a function of."""

    def __init__(self, split: _SplitMap, sets: list[frozenset[int]]):
        self.split, self.basis, self.sets = split, split.basis, sets

    def prepare(self, js: np.ndarray, thetas: np.ndarray, float32: bool) -> None:
        num = js >= 0
        self.split.prepare(js[num], thetas[num], float32)

    def get(self, j: int, theta: float, float32: bool) -> tuple[list[int], float, bool]:
        if j >= 0:
            return self.split.get(j, theta, float32)
        return self._categorical(-1 - j, self.sets[int(theta)])

    def _categorical(self, j: int, codes: frozenset[int]) -> tuple[list[int], float, bool]:
        s = self.split
        a, c0 = s.A[j], float(s.c[j])
        nz = np.flatnonzero(a)
        feats = np.unique(s.owner[nz]) if len(nz) else np.zeros(0, dtype=np.int64)
        if len(feats) != 1 or not s.encoder.blocks_[int(feats[0])].feature.kind.has_levels:
            raise UnsupportedModelError(
                f"{s.label}: a categorical split on input {j} does not read one categorical "
                "feature's levels; not supported")
        block = s.encoder.blocks_[int(feats[0])]
        z = np.array([a @ s._level_point(block, k) + c0
                      for k in range(block.feature.n_levels)])
        near = np.round(z)
        code = np.where(np.abs(z - near) <= 1e-9 * (1.0 + np.abs(z)), near, np.trunc(z))
        left = np.array([v >= 0 and int(v) in codes for v in code])
        if left.all() or not left.any():
            return [int(nz[0])], (np.inf if left.all() else -np.inf), False
        if block.encoding == "onehot":
            right, lefts = np.flatnonzero(~left), np.flatnonzero(left)
            if len(right) <= len(lefts):  # any right level set: go right
                return [block.start + int(k) for k in right], 0.5, False
            return [block.start + int(k) for k in lefts], 0.5, True
        if block.encoding == "binary":  # level 1 iff x > 0.5
            return [block.start], 0.5, bool(left[1])
        if block.encoding == "thermometer":
            m = int(np.argmin(left)) if left[0] else int(np.argmax(left))
            if left[0] and not left[m:].any():
                return [block.start + m - 1], 0.5, False
            if not left[0] and left[m:].all():
                return [block.start + m - 1], 0.5, True
        hint = (f"; declare {block.feature.name!r} kind 'categorical' in the schema (pass a "
                "Dataset or Schema) so that its levels are one-hot"
                if block.encoding == "thermometer" else "")
        raise UnsupportedModelError(
            f"{s.label}: a categorical split on {block.feature.name!r} is not one set of "
            f"{block.encoding} levels; not supported{hint}")


def _to_model_space(parsed: BoosterDump, split: _SplitMap) -> AdditiveTrees:
    sets: list[frozenset[int]] = []
    views, output = [], []
    for tree in parsed.trees:
        feature = tree.feature.copy()
        thr = tree.threshold.copy()
        for i, cat in enumerate(tree.categories):
            if cat is not None:
                feature[i] = -1 - feature[i]
                thr[i] = float(len(sets))
                sets.append(cat)
        leaf = tree.left < 0
        views.append(_mapped_tree(feature, thr, tree.left, tree.right, leaf, tree.value[:, None],
                                  _BoosterSplits(split, sets), tree.float32))  # type: ignore[arg-type]
        output.append(tree.output)
    if not views:
        raise UnsupportedModelError(f"{split.label}: the booster has no trees")
    return AdditiveTrees(views, np.array(output), parsed.baseline)


# ----------------------------------------------------------------------------------------
# The bare booster on a raw frame with LightGBM category columns
# ----------------------------------------------------------------------------------------


def _category_fold(columns: list[str], levels: dict[str, list[Any]], data_or_schema: Any
                   ) -> tuple[Encoder, _Basis, np.ndarray, np.ndarray, pd.DataFrame | None,
                              Dataset | None]:
    """A bare LightGBM on a frame with pandas ``category`` columns: those enter the booster
    as their code (the position in ``pandas_categorical``), numbers as their value."""
    dataset, schema, frame = _data_parts(data_or_schema)
    if schema is None:
        if frame is None:
            raise ValidationError(
                "a LightGBM model with category columns needs the training frame or a Schema")
        roles = _Roles()
        for name in columns:
            if name in levels:
                roles.categorical[name] = [("categorical", tuple(_plain(v) for v in levels[name]),
                                            False, f"LightGBM's category column {name!r}")]
            else:
                roles.numeric[name] = ["the estimator"]
        schema = _schema_from(columns, roles, frame)
    missing = [c for c in columns if c not in schema]
    if missing or len(schema.names) != len(columns):
        raise UnsupportedModelError(
            f"the booster takes columns {columns}, the schema has {list(schema.names)}")
    if frame is not None:
        schema.validate(frame[list(schema.names)])
    encoder = Encoder(schema).fit()
    basis = _Basis(encoder)
    A, c = np.zeros((len(columns), basis.d)), np.zeros(len(columns))
    for j, name in enumerate(columns):
        if name in levels:
            f = encoder.block(name).feature
            pos = {repr(_plain(v)): i for i, v in enumerate(levels[name])}
            codes = np.array([pos.get(repr(_plain(v)), -1) for v in f.categories], dtype=np.float64)
            R, r = basis.levels(name)
            A[j], c[j] = codes @ R, codes @ r
        else:
            A[j], c[j] = basis.value(name)
    return encoder, basis, A, c, frame, dataset


# ----------------------------------------------------------------------------------------
# Entry point
# ----------------------------------------------------------------------------------------


def _check_conflicts(parsed: BoosterDump, A: np.ndarray, c: np.ndarray,
                     columns: list[str] | None, what: str) -> None:
    """Refuse when an input can take a value some split treats as missing against its
    threshold: its range over the unit box (every valid row) meets the conflict interval."""
    if not parsed.conflicts:
        return
    lo, hi = _box_range(A, c)
    for j, (a, b) in sorted(parsed.conflicts.items()):
        if a <= hi[j] and lo[j] <= b:
            name = f"column {columns[j]!r}" if columns is not None else f"input {j}"
            raise UnsupportedModelError(
                f"{what}: a split on {name} treats the values in [{a:.9g}, {b:.9g}] as missing "
                "(XGBoost's `missing`, LightGBM's zero_as_missing) and sends them against its "
                "threshold; valid rows reach them and the tree view cannot express that")


def _parse_checked(final: Any, what: str) -> BoosterDump:
    """The booster's dump, after the checks every entry point makes (the scikit-learn
    wrapper, a classifier, fitted)."""
    module = type(final).__module__.split(".")[0]
    if module == "xgboost":
        from xgboost import XGBModel as wrapper
    else:
        from lightgbm import LGBMModel as wrapper
    if not isinstance(final, wrapper):
        raise UnsupportedModelError(
            f"{what} is not supported; pass the scikit-learn wrapper (XGBClassifier, "
            "LGBMClassifier) the model was fitted with")
    if "Ranker" in type(final).__name__:
        raise UnsupportedModelError(f"{what}: ranking models are not supported; only classifiers")
    if "Regressor" in type(final).__name__:
        raise UnsupportedModelError(f"{what}: regression models are not supported; only classifiers")
    parsed = _xgb_parse(final, what) if module == "xgboost" else _lgb_parse(final, what)
    if not hasattr(final, "classes_"):
        raise NotFittedError(f"{what} is not fitted")
    return parsed


def _check_logits(parsed: BoosterDump, classes: np.ndarray, what: str) -> None:
    n_logits = len(parsed.baseline)
    if (len(classes) == 2) != (n_logits == 1) or (len(classes) > 2 and len(classes) != n_logits):
        raise UnsupportedModelError(f"{what}: {n_logits} logits for {len(classes)} classes")


def booster_view(final: Any, encoder: Encoder, A: np.ndarray | None = None,
                 c: np.ndarray | None = None, label: str = "the estimator") -> AdditiveTrees:
    """The :class:`AdditiveTrees` view over ``encoder``'s model space of a fitted
    ``XGBClassifier`` / ``LGBMClassifier`` whose inputs are ``z = A x + c`` for model-space
    rows ``x`` (default: the identity, a booster fitted on ``encoder.transform(frame)``; how
    :func:`~robustce.models.wrap` and the retraining families in
    :mod:`robustce.models.families` read boosters). Exact as :func:`import_booster` is; the
    same refusals (:class:`~robustce.errors.UnsupportedModelError`,
    :class:`~robustce.errors.NotFittedError`), and a booster that takes another number of
    inputs than ``A`` has rows is refused."""
    what = f"{label} ({type(final).__name__})"
    d = encoder.n_features_out_
    A = np.eye(d) if A is None else np.asarray(A, dtype=np.float64)
    c = np.zeros(A.shape[0]) if c is None else np.asarray(c, dtype=np.float64)
    parsed = _parse_checked(final, what)
    if A.shape[0] != parsed.n_features:
        raise UnsupportedModelError(
            f"{what} takes {parsed.n_features} features but the model space gives {A.shape[0]}")
    _check_conflicts(parsed, A, c, None, what)
    _check_logits(parsed, np.asarray(final.classes_), what)
    return _to_model_space(parsed, _SplitMap(A, c, encoder, _Basis(encoder), what))


def import_booster(estimator: Any, pre: list[tuple[str, Any]], final: Any, final_label: str,
                   data_or_schema: Any, class_names: Any = None) -> ImportedBoostedModel:
    """The :func:`~robustce.models.from_sklearn` path for XGBoost and LightGBM classifiers
    (``final``, bare or the last step of ``estimator`` after the steps ``pre``)."""
    what = f"{final_label} ({type(final).__name__})"
    parsed = _parse_checked(final, what)
    levels: dict[str, list[Any]] = {}
    if not pre and parsed.pandas_categorical:
        names = parsed.feature_names or []
        cat_cols = [str(n) for n in getattr(final, "feature_names_in_", names)]
        # pandas_categorical lists the category columns' levels in column order
        frame = data_or_schema.frame if isinstance(data_or_schema, Dataset) else data_or_schema
        if isinstance(frame, pd.DataFrame):
            cat_names = [c for c in cat_cols if c in frame.columns
                         and isinstance(frame[c].dtype, pd.CategoricalDtype)]
        elif isinstance(data_or_schema, Schema):
            cat_names = [c for c in cat_cols if c in data_or_schema
                         and data_or_schema[c].kind.has_levels]
        else:
            raise ValidationError(
                f"{what} has category columns; pass the training frame or a Schema")
        if len(cat_names) != len(parsed.pandas_categorical):
            raise UnsupportedModelError(
                f"{what} has {len(parsed.pandas_categorical)} category columns, the data "
                f"{len(cat_names)} ({cat_names})")
        levels = dict(zip(cat_names, parsed.pandas_categorical, strict=True))
    given = (list(data_or_schema.schema.names) if isinstance(data_or_schema, Dataset)
             else list(data_or_schema.names) if isinstance(data_or_schema, Schema)
             else [str(c) for c in data_or_schema.columns]
             if isinstance(data_or_schema, pd.DataFrame) else None)
    if not pre and given is not None:
        if parsed.feature_names is not None and sorted(given) != sorted(parsed.feature_names):
            raise UnsupportedModelError(
                f"{what} was fitted on columns {parsed.feature_names}, the data has {given}")
        if len(given) != parsed.n_features:
            raise UnsupportedModelError(
                f"{what} takes {parsed.n_features} features but is given {len(given)} columns")
    if levels:
        columns = [str(c) for c in final.feature_names_in_]
        encoder, basis, A, c, frame, dataset = _category_fold(columns, levels, data_or_schema)
    else:
        encoder, basis, A, c, columns, frame, dataset = _fold_preprocessing(
            estimator, pre, data_or_schema)
    if A.shape[0] != parsed.n_features:
        raise UnsupportedModelError(
            f"{what} takes {parsed.n_features} features but is given {A.shape[0]} "
            f"({'after the preprocessing' if pre else 'columns'})")
    _check_conflicts(parsed, A, c, columns if not pre else None, what)
    classes = np.asarray(final.classes_)
    _check_logits(parsed, classes, what)
    names = _class_names(classes, class_names, dataset)
    split = _SplitMap(A, c, encoder, basis, what, *_oracle(pre, frame, columns, encoder, basis))
    ensemble = _to_model_space(parsed, split)
    model = ImportedBoostedModel(ensemble, encoder, names, estimator, (A, c), columns)
    return _warn_if_constant(model, final, frame, columns)


register_final_importer(is_booster, import_booster)
