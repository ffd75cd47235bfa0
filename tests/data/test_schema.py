"""Schema, inference, Dataset and from_frame: exact behaviour and error messages."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.data import Actionability, Feature, FeatureKind, Schema, infer_schema
from robustce.data.dataset import encode_labels
from robustce.errors import RobustCEError, SchemaError, ValidationError


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "age": [25, 40, 61, 33],
            "income": [1.5, 2.25, 3.0, 0.5],
            "flag": [0, 1, 1, 0],
            "city": ["a", "b", "a", "c"],
            "edu": pd.Categorical(["lo", "hi", "mid", "lo"], categories=["lo", "mid", "hi"],
                                  ordered=True),
            "member": [True, False, True, True],
            "whole": [1.0, 2.0, 3.0, 4.0],
        }
    )


# ----------------------------------------------------------------------------------------
# Feature / Schema construction
# ----------------------------------------------------------------------------------------


def test_feature_normalises_integer_bounds():
    f = Feature("n", "integer", 0.5, 3.7)
    assert (f.lower, f.upper) == (1, 3)
    assert f.kind is FeatureKind.INTEGER and f.actionability is Actionability.FREE


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "fuzzy"}, "unknown kind 'fuzzy'"),
        ({"kind": "continuous"}, "needs lower and upper bounds"),
        ({"kind": "continuous", "lower": 2, "upper": 1}, r"lower <= upper, got \[2, 1\]"),
        ({"kind": "continuous", "lower": 0, "upper": np.inf}, "bounds must be finite"),
        ({"kind": "integer", "lower": 0.2, "upper": 0.8}, "no integer in its bounds"),
        ({"kind": "categorical"}, "needs its categories"),
        ({"kind": "categorical", "categories": ("a", "a")}, "not unique"),
        ({"kind": "binary", "categories": (0, 1, 2)}, "binary but has 3 categories"),
        ({"kind": "ordinal", "categories": (1, 2), "lower": 0}, "takes no numeric bounds"),
        ({"kind": "continuous", "lower": 0, "upper": 1, "categories": (1,)},
         "takes no categories"),
        ({"kind": "categorical", "categories": ("a", "b"), "actionability": "increase"},
         "increase-only needs an ordered kind"),
        ({"kind": "continuous", "lower": 0, "upper": 1, "actionability": "sometimes"},
         "unknown actionability 'sometimes'"),
    ],
)
def test_feature_errors_name_the_problem(kwargs, message):
    with pytest.raises(SchemaError, match=message) as info:
        Feature("x", **kwargs)
    assert "'x'" in str(info.value)


def test_schema_errors():
    with pytest.raises(SchemaError, match="at least one feature"):
        Schema([])
    with pytest.raises(SchemaError, match=r"duplicate feature names in schema: \['a'\]"):
        Schema([Feature("a", "binary"), Feature("a", "binary")])
    with pytest.raises(SchemaError, match="must be Feature objects"):
        Schema(["a"])
    with pytest.raises(SchemaError, match="no feature named 'zz'"):
        Schema([Feature("a", "binary")])["zz"]


def test_schema_dict_round_trip_and_derivation(frame):
    schema = infer_schema(frame, immutable=["age"])
    again = Schema.from_dict(schema.to_dict())
    assert again == schema
    assert schema.immutable == ["age"]
    changed = schema.with_actionability(income="increase")
    assert changed["income"].actionability is Actionability.INCREASE
    assert schema["income"].actionability is Actionability.FREE  # original untouched
    assert schema.select(["city", "age"]).names == ["city", "age"]
    with pytest.raises(SchemaError, match="unknown keys"):
        Feature.from_dict({"name": "a", "kind": "binary", "colour": "red"})


# ----------------------------------------------------------------------------------------
# Inference
# ----------------------------------------------------------------------------------------


def test_infer_schema_rules(frame):
    schema = infer_schema(frame)
    kinds = {f.name: f.kind.value for f in schema}
    assert kinds == {"age": "integer", "income": "continuous", "flag": "binary",
                     "city": "categorical", "edu": "ordinal", "member": "binary",
                     "whole": "integer"}
    assert (schema["age"].lower, schema["age"].upper) == (25, 61)
    assert schema["city"].categories == ("a", "b", "c")
    assert schema["edu"].categories == ("lo", "mid", "hi")
    assert schema["member"].categories == (False, True)


def test_infer_schema_overrides(frame):
    schema = infer_schema(
        frame,
        kinds={"age": "continuous", "flag": "categorical"},
        ordinal={"city": ("c", "b", "a")},
        bounds={"income": (0, 10)},
        immutable=["age"], increasing=["city"], decreasing=["income"],
    )
    assert schema["age"].kind is FeatureKind.CONTINUOUS and schema["age"].immutable
    assert schema["flag"].kind is FeatureKind.CATEGORICAL
    assert schema["city"].kind is FeatureKind.ORDINAL
    assert schema["city"].categories == ("c", "b", "a")
    assert (schema["income"].lower, schema["income"].upper) == (0, 10)
    assert schema["income"].actionability is Actionability.DECREASE


def test_infer_schema_errors(frame):
    with pytest.raises(SchemaError, match=r"kinds names columns not in the frame: \['nope'\]"):
        infer_schema(frame, kinds={"nope": "binary"})
    with pytest.raises(SchemaError, match="'age' given two actionabilities"):
        infer_schema(frame, immutable=["age"], increasing=["age"])
    with pytest.raises(ValidationError, match=r"missing values \(NaN\) in columns \['income'\]"):
        infer_schema(frame.assign(income=[1.0, np.nan, 2.0, 3.0]))
    with pytest.raises(SchemaError, match="'city' has dtype"):
        infer_schema(frame, kinds={"city": "integer"})
    with pytest.raises(ValidationError, match="expected a pandas DataFrame"):
        infer_schema(np.zeros((2, 2)))
    with pytest.raises(SchemaError, match="feature 'age': unknown kind 'fuzzy'"):
        infer_schema(frame, kinds={"age": "fuzzy"})


# ----------------------------------------------------------------------------------------
# Validation
# ----------------------------------------------------------------------------------------


def test_validate_messages(frame):
    schema = infer_schema(frame, bounds={"age": (25, 61)})  # declared: a hard domain
    schema.validate(frame)
    cases = [
        (frame.drop(columns=["city", "age"]), r"missing columns: \['age', 'city'\]"),
        (frame.assign(extra=1), r"unexpected columns not in the schema: \['extra'\]"),
        (frame.assign(income=[np.nan, 1.0, 2.0, 3.0]),
         r"missing values \(NaN\) in columns: \['income'\]"),
        (frame.assign(age=[25, 40, 99, 33]),
         r"column 'age' has values outside its bounds \[25, 61\]: min 25, max 99"),
        (frame.assign(age=[25.5, 40, 61, 33]), "'age' is integer but has fractional values"),
        (frame.assign(income=["x", "y", "z", "w"]), "'income' is continuous but has dtype"),
        (frame.assign(income=[np.inf, 1.0, 2.0, 3.0]), "'income' has infinite values"),
        (frame.assign(city=["a", "b", "zz", "c"]),
         r"column 'city' has unseen categories \['zz'\]; known: \['a', 'b', 'c'\]"),
        (frame.assign(flag=[0, 1, 2, 0]), r"column 'flag' has unseen categories \[2\]"),
    ]
    for bad, message in cases:
        with pytest.raises(ValidationError, match=message):
            schema.validate(bad)
    with pytest.raises(ValidationError, match="expected a pandas DataFrame"):
        schema.validate(frame.to_numpy())
    schema.validate(frame.assign(age=[25, 40, 99, 33]), check_bounds=False)
    infer_schema(frame).validate(frame.assign(age=[25, 40, 99, 33]))  # observed: information


def test_validate_names_the_first_bad_column_in_feature_order(frame):
    """Numeric columns are checked on one array; with several bad columns the message still
    names the first one in the schema's order, with its own problem."""
    declared = {"age": (25, 61)}
    schema = infer_schema(frame, bounds=declared)
    two_bad = frame.assign(age=[25, 40, 99, 33], income=[np.inf, 1.0, 2.0, 3.0])
    with pytest.raises(ValidationError, match=r"column 'age' has values outside its bounds"):
        schema.validate(two_bad)
    reordered = infer_schema(frame[["income", "age", "flag", "city", "edu", "member", "whole"]],
                             bounds=declared)
    with pytest.raises(ValidationError, match="'income' has infinite values"):
        reordered.validate(two_bad)
    # a bad category before a bad number: the category is named
    early = infer_schema(frame[["city", "age", "income", "flag", "edu", "member", "whole"]],
                         bounds=declared)
    with pytest.raises(ValidationError, match="column 'city' has unseen categories"):
        early.validate(two_bad.assign(city=["a", "b", "zz", "c"]))


def test_numeric_labels_match_by_value():
    schema = Schema([Feature("code", "categorical", categories=(1, 2, 3))])
    schema.validate(pd.DataFrame({"code": [1.0, 3.0]}))  # 1.0 is the label 1
    with pytest.raises(ValidationError, match="unseen categories"):
        schema.validate(pd.DataFrame({"code": ["1"]}))  # the string "1" is not


# ----------------------------------------------------------------------------------------
# Dataset and from_frame
# ----------------------------------------------------------------------------------------


def test_from_frame_and_dataset_operations(frame):
    df = frame.assign(label=["no", "yes", "yes", "no"])
    data = rc.datasets.from_frame(df, "label", positive="yes", immutable=["age"])
    assert data.class_names == ("no", "yes")
    assert data.y.tolist() == [0, 1, 1, 0]
    assert "label" not in data.frame.columns
    assert data.schema.immutable == ["age"]
    info = data.describe()
    assert info["rows"] == 4 and info["class_balance"] == {"no": 2, "yes": 2}
    sub = data.subset(np.array([True, False, True, False]))
    assert sub.frame.index.tolist() == [0, 2]
    train, test = data.split(test_size=0.5, random_state=0)
    assert sorted(train.frame.index.tolist() + test.frame.index.tolist()) == [0, 1, 2, 3]
    assert train.y.sum() == 1 and test.y.sum() == 1  # stratified


def test_from_frame_errors(frame):
    df = frame.assign(label=[0, 1, 1, 0])
    with pytest.raises(ValidationError, match=r"target column 'target' not in the frame"):
        rc.datasets.from_frame(df, "target")
    with pytest.raises(ValidationError, match="target column 'label' has missing values"):
        rc.datasets.from_frame(df.assign(label=[0, np.nan, 1, 0]), "label")
    with pytest.raises(ValidationError, match=r"missing values \(NaN\) in columns \['income'\]"):
        rc.datasets.from_frame(df.assign(income=[np.nan, 1, 2, 3]), "label")
    with pytest.raises(ValidationError, match="needs at least two classes"):
        rc.datasets.from_frame(df.assign(label=1), "label")
    with pytest.raises(ValidationError, match="positive label 'maybe' not among"):
        rc.datasets.from_frame(df, "label", positive="maybe")
    schema = infer_schema(frame)
    with pytest.raises(ValidationError, match="inference options"):
        rc.datasets.from_frame(df, "label", schema=schema, immutable=["age"])
    with pytest.raises(ValidationError, match=r"unseen categories \['q'\]"):
        rc.datasets.from_frame(df.assign(city=["a", "q", "a", "c"]), "label", schema=schema)


def test_dataset_shape_errors(frame):
    schema = infer_schema(frame)
    with pytest.raises(ValidationError, match="frame has 4 rows but target has 3"):
        rc.datasets.Dataset(frame, pd.Series([0, 1, 0]), schema)
    data = rc.datasets.Dataset(frame, pd.Series([0, 1, 0, 1]), schema)
    with pytest.raises(ValidationError, match="has no groups"):
        data.by_group()
    with pytest.raises(ValidationError, match=r"test_size must be in \(0, 1\)"):
        data.split(test_size=1.5)


def test_encode_labels_multiclass_order():
    codes, names = encode_labels(pd.Series(["b", "c", "a", "b"]))
    assert names == ("a", "b", "c") and codes.tolist() == [1, 2, 0, 1]
    codes, names = encode_labels(pd.Series([2, 1, 2]), class_names=(2, 1))
    assert names == (2, 1) and codes.tolist() == [0, 1, 0]


def test_all_errors_share_the_base_class():
    assert issubclass(SchemaError, RobustCEError) and issubclass(ValidationError, ValueError)
