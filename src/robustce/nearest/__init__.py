"""The nearest-CE engine below the methods: the search that :class:`~robustce.methods.
MILPNearest` runs and that MILP-R, EnsembleRobust and MACE's MILP backend build on.

Modules, by what they hold:

- :mod:`~robustce.nearest.costs` — distance weights and MINT's pricing of causal children;
- :mod:`~robustce.nearest.domains` — the actionable input domain (causal children freed), the
  box an incumbent leaves, the solver's own point;
- :mod:`~robustce.nearest.incumbents` — feasible CEs known before the solve (training points,
  segments, linear-region steps; tree candidates);
- :mod:`~robustce.nearest.network` — the network MILP (bounds, relaxation first, cutoff);
- :mod:`~robustce.nearest.trees` — the tree MILP (stages below the incumbent);
- :mod:`~robustce.nearest.core` — what they share, and what the host explainer provides;
- :mod:`~robustce.nearest.search` — :class:`NearestSearch`, all of it as one mixin.
"""

from robustce.nearest.core import Incumbent
from robustce.nearest.costs import column_weights, feature_distance, priced_weights
from robustce.nearest.domains import causal_input_domain, incumbent_box, milp_point
from robustce.nearest.incumbents import tree_candidates
from robustce.nearest.search import NearestSearch

__all__ = ["Incumbent", "NearestSearch", "causal_input_domain", "column_weights",
           "feature_distance", "incumbent_box", "milp_point", "priced_weights",
           "tree_candidates"]
