"""Data layer: schema, encoder raw <-> model space, datasets."""

from robustce.data.constraints import Constraints
from robustce.data.dataset import Dataset, from_frame
from robustce.data.encoder import Encoder, FeatureBlock
from robustce.data.schema import Actionability, Feature, FeatureKind, Schema, infer_schema

__all__ = [
    "Actionability",
    "Constraints",
    "Dataset",
    "Encoder",
    "Feature",
    "FeatureBlock",
    "FeatureKind",
    "Schema",
    "from_frame",
    "infer_schema",
]
