"""MILP encodings of ReLU networks, of their interval abstractions, and of input domains.

The encodings live by concept: :mod:`~robustce.solvers.network_encoding` (plain and interval
ReLU networks, big-M from interval bounds), :mod:`~robustce.solvers.domain_encoding` (input
variables of model space with the encoder's structure), :mod:`~robustce.solvers.distance_encoding`
(a distance as the objective), :mod:`~robustce.solvers.constraint_encoding` (user constraints as
rows) and :mod:`~robustce.solvers.hull_encoding` (a convex-hull region). Every name is
importable from here.
"""

from robustce.solvers.constraint_encoding import encode_constraints
from robustce.solvers.distance_encoding import DistanceObjective, encode_distance
from robustce.solvers.domain_encoding import (
    InputDomain,
    InputVars,
    column_kinds,
    encode_input_domain,
    restrict_domain,
)
from robustce.solvers.hull_encoding import HullRegion, encode_hull_region
from robustce.solvers.network_encoding import (
    LayerEncoding,
    NetworkEncoding,
    encode_interval_network,
    encode_network,
    encode_shifted_network,
    plain_interval,
)

__all__ = [
    "DistanceObjective",
    "HullRegion",
    "InputDomain",
    "InputVars",
    "LayerEncoding",
    "column_kinds",
    "NetworkEncoding",
    "encode_constraints",
    "encode_distance",
    "encode_hull_region",
    "encode_input_domain",
    "encode_interval_network",
    "encode_network",
    "encode_shifted_network",
    "plain_interval",
    "restrict_domain",
]
