"""``from_sklearn``: a fitted scikit-learn pipeline on *raw* DataFrames as a robustce model.

A lender's model typically is ``Pipeline([("pre", ColumnTransformer([...])), ("clf", ...)])``
fitted on the raw frame. :func:`from_sklearn` reads the raw schema (kinds, categories, bounds)
from the fitted transformers (and from ``data`` when given), builds robustce's
:class:`~robustce.data.Encoder` for it, and folds the whole preprocessing into the model:

* every supported transformer is an affine map of the raw features — numbers enter as their
  value ``lower + (upper − lower)·x``, categories as their level indicators (one-hot columns,
  or thermometer differences for ordinals) — so the preprocessing is ``Z = A x + c`` over
  robustce's model space ``x``;
* linear models and ReLU MLPs: the first layer becomes ``(W A, W c + b)`` (a
  :class:`~robustce.models.network.ReLUNetwork` every MILP method and certifier consumes);
* trees and forests (:class:`~robustce.models.trees.TreeView`) and gradient boosting
  (:class:`~robustce.models.boosting.AdditiveTrees`): every split ``z_j <= θ`` is mapped back to
  one model-space column (``x_k <= (θ − c_j)/A_jk``; children swapped when ``A_jk < 0``; on a
  categorical or ordinal feature the set of levels going left becomes one indicator or
  thermometer column).

The fold is checked against the pipeline's own ``transform`` on the training rows (when
given) and on random rows of the schema; a mismatch is an :class:`UnsupportedModelError`.
Anything that is not exactly affine (a custom transformer, ``PolynomialFeatures``, a
non-ReLU activation, ``MinMaxScaler(clip=True)`` beyond its fitted range, native categorical
splits) raises :class:`UnsupportedModelError` naming the step.

Supported transformers: ``ColumnTransformer`` (with ``remainder``), nested ``Pipeline``,
``OneHotEncoder`` (``drop``, ``handle_unknown``, infrequent categories), ``OrdinalEncoder``,
``StandardScaler``, ``MinMaxScaler``, ``RobustScaler``, ``MaxAbsScaler``, ``SimpleImputer``
(the identity on complete rows), feature selectors (``VarianceThreshold``, ``SelectKBest``…),
``"passthrough"`` and ``"drop"``. Final estimators: ``LogisticRegression`` and other linear
classifiers, ``MLPClassifier(activation="relu")``, ``DecisionTreeClassifier``,
``ExtraTreeClassifier``, ``RandomForestClassifier``, ``ExtraTreesClassifier``,
``GradientBoostingClassifier`` and ``HistGradientBoostingClassifier`` (numeric splits);
``XGBClassifier`` and ``LGBMClassifier`` through :mod:`robustce.models.boosters`.

Modules: ``raw_schema`` (pass 1: the raw columns' roles and schema), ``preprocessing`` (pass 2:
every preprocessing step folded into ``Z = A x + c``, checked), ``splits`` (tree splits on
``Z`` mapped back to model space), ``estimators`` (scikit-learn's estimator families folded),
``imported`` (the returned models) and ``registry`` (:func:`from_sklearn` and the importers
other modules register).
"""

from robustce.models.sklearn_import.estimators import SUPPORTED_ESTIMATORS  # noqa: F401
from robustce.models.sklearn_import.imported import (
    ImportedBoostedModel,
    ImportedNetworkModel,
    ImportedTreeModel,
)
from robustce.models.sklearn_import.preprocessing import (  # noqa: F401
    SUPPORTED_TRANSFORMERS,
    fold_preprocessing,
)
from robustce.models.sklearn_import.registry import (  # noqa: F401  (boosters register here)
    from_sklearn,
    register_final_importer,
)

__all__ = [
    "ImportedBoostedModel",
    "ImportedNetworkModel",
    "ImportedTreeModel",
    "fold_preprocessing",
    "from_sklearn",
]
