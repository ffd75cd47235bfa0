"""SBA loans, the California case study as ROAR uses it."""

from __future__ import annotations

import numpy as np

from robustce.data.dataset import Dataset
from robustce.data.loaders._common import PathLike, _finish, _kinds, _levels, _read, _whole_to_int
from robustce.data.schema import infer_schema

SBA_ROAR_DROP = ("Selected", "State", "Name", "BalanceGross", "LowDoc", "BankState",
                 "LoanNr_ChkDgt", "MIS_Status", "Default", "Bank", "City")
SBA_LEAKS = ("ChgOffDate", "ChgOffPrinGr")
SBA_DESCRIPTION = (
    "SBA loans case study (California, NAICS 53; 2 102 rows), ROAR's version. Class 1 = "
    "NoDefault = 1 - Default (loan paid in full, favourable). Groups: 'pre' = ApprovalFY < "
    "2006, 'post' otherwise. ROAR's ID/leaking columns dropped, plus the charge-off "
    "columns ChgOffDate and ChgOffPrinGr (drop_leaks=False keeps them). Immutable: Zip, "
    "NAICS, ApprovalDate, ApprovalFY, NewExist, New, Recession."
)


def load_sba(data_home: PathLike = None, drop_leaks: bool = True) -> Dataset:
    """SBA case-study loans as in ROAR, 2 102 rows. Class 1 = no default.

    ROAR drops ``Selected, State, Name, BalanceGross, LowDoc, BankState, LoanNr_ChkDgt,
    MIS_Status, Default, Bank, City``. ``ChgOffDate`` (empty unless charged off) and
    ``ChgOffPrinGr`` (amount charged off) also reveal the label almost perfectly, so they are
    dropped too unless ``drop_leaks=False``. Missing values (a handful of rows) are filled:
    NewExist -> 0 (the file's "undefined" code), RevLineCr -> "0" (likewise),
    DisbursementDate -> ApprovalDate, xx -> DisbursementDate + daysterm (its definition),
    ChgOffDate -> 0 (never charged off). Groups: ``"pre"`` (ApprovalFY < 2006) / ``"post"``.
    """
    relpath = "sba/SBAcase.11.13.17.csv"
    df = _read(relpath, data_home, encoding="utf-8-sig")
    y = 1 - df["Default"].astype(np.int64)
    groups = np.where(df["ApprovalFY"] < 2006, "pre", "post")
    drop = list(SBA_ROAR_DROP) + (list(SBA_LEAKS) if drop_leaks else [])
    X = df.drop(columns=drop)
    X["NewExist"] = X["NewExist"].fillna(0)
    X["RevLineCr"] = X["RevLineCr"].fillna("0")
    X["DisbursementDate"] = X["DisbursementDate"].fillna(X["ApprovalDate"])
    X["xx"] = X["xx"].fillna(X["DisbursementDate"] + X["daysterm"])
    whole = ["NewExist", "DisbursementDate", "xx"]
    if not drop_leaks:
        X["ChgOffDate"] = X["ChgOffDate"].fillna(0)
        whole.append("ChgOffDate")
    X = _whole_to_int(X, whole)
    kinds = _kinds(
        categorical=["NAICS", "NewExist", "FranchiseCode", "UrbanRural", "RevLineCr"],
        binary=["New", "RealEstate", "Recession"],
        continuous=["Portion"],
    )
    kinds.update({c: "integer" for c in X.columns if c not in kinds})
    schema = infer_schema(
        X, kinds=kinds,
        categories={"NewExist": _levels(X["NewExist"], (0, 1, 2)),
                    "UrbanRural": _levels(X["UrbanRural"], (0, 1, 2)),
                    "New": (0, 1), "RealEstate": (0, 1), "Recession": (0, 1)},
        immutable=["Zip", "NAICS", "ApprovalDate", "ApprovalFY", "NewExist", "New",
                   "Recession"],
    )
    return _finish("sba", X, y, schema, ("default", "no_default"), SBA_DESCRIPTION,
                   groups=groups, group_name="period",
                   meta={"files": [relpath], "target": "NoDefault = 1 - Default",
                         "drop_leaks": drop_leaks})
