"""Every subcommand × every actionability flag, with a model trained by the command and with a
saved ``--model`` (issue 53): the flag changes what the CEs may do — or the subcommand refuses
it in one line. Before, ``--model`` silently kept the saved schema's actionability.

Each case reads the command's own output (the Explanations directory, the notices' options,
the audit's per-applicant rows) and checks the rule on every CE; the baseline test shows the
same model and rows break each rule without the flag, so no case passes vacuously."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.cli import main

DATA = ["--dataset", "synthetic_loan", "--seed", "0"]
TRAIN = ["--hidden", "8", "--epochs", "20"]
# small solver work: an exact but fast method on a few applicants
RUN = {
    "explain": ["--method", "milp_nearest", "--queries", "5", "--show", "0"],
    "notice": ["--method", "milp_nearest", "--applicants", "4"],
    "audit": ["--method", "milp_nearest", "--groups", "housing", "--sample-fraction", "0.05",
              "--bootstrap", "5", "--min-group", "2"],
}
FEATURES = ["age", "education", "years_employed", "income", "housing", "debt", "has_guarantor",
            "prior_default"]


def _changed(q, c):
    return not np.isclose(float(q), float(c), rtol=1e-9, atol=1e-6) if q is not None else c is not None


def _decreased(q, c):
    return float(c) < float(q) - 1e-6


def _increased(q, c):
    return float(c) > float(q) + 1e-6


# flag -> what a CE may not do to the feature it names
RULES = {"--immutable": _changed, "--protected": _changed, "--increase-only": _decreased,
         "--decrease-only": _increased}
# the flags of each case (flag, feature): the nearest CEs raise income, and lower debt once
# income is fixed, so each flag forbids what they do without it
CASE_FLAGS = {
    "--immutable": [("--immutable", "income")],
    "--protected": [("--protected", "income")],
    "--increase-only": [("--immutable", "income"), ("--increase-only", "debt")],
    "--decrease-only": [("--decrease-only", "income")],
}
# flags a subcommand does not take: refused by argparse in one line
REFUSED = {("explain", "--protected")}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A model saved by ``explain`` (no flags), and one saved with income immutable (for
    ``--free``)."""
    root = tmp_path_factory.mktemp("flags")
    assert main(["explain", *DATA, *TRAIN, *RUN["explain"], "--quiet", "--out",
                 str(root / "base")]) == 0
    assert main(["explain", *DATA, *TRAIN, *RUN["explain"], "--quiet", "--immutable", "income",
                 "--out", str(root / "fixed")]) == 0
    return {"model": root / "base" / "model", "income_fixed": root / "fixed" / "model"}


def _run(command: str, out: Path, *extra: str) -> int:
    return main([command, *DATA, *RUN[command], "--quiet", "--out", str(out), *extra])


def _pairs(command: str, out: Path) -> list[tuple[dict, dict]]:
    """(applicant, CE) raw values of every CE the command wrote."""
    if command == "explain":
        expl = rc.Explanations.load(out)
        cfs = expl.counterfactuals
        queries = expl.queries.loc[cfs["query_id"]]
        return [(q.to_dict(), c.to_dict()) for (_, q), (_, c)
                in zip(queries[FEATURES].iterrows(), cfs[FEATURES].iterrows(), strict=True)]
    if command == "notice":
        pairs = []
        for path in sorted(out.glob("notice_*.json")):
            doc = json.loads(path.read_text())
            for option in doc["options"]:
                ce = dict(doc["applicant"]) | {ch["feature"]: ch["required"]
                                               for ch in option["changes"]}
                pairs.append((doc["applicant"], ce))
        return pairs
    parts = sorted((out / "parts").glob("part-*"))
    rows = pd.concat([pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
                      for p in parts])
    rows = rows[rows["found"].astype(bool)]
    return [({f: r[f"x:{f}"] for f in FEATURES}, {f: r[f"cf:{f}"] for f in FEATURES})
            for _, r in rows.iterrows()]


def _broken(pairs, flag: str, feature: str) -> int:
    """How many CEs do to ``feature`` what ``flag`` forbids."""
    return sum(bool(RULES[flag](q.get(feature), c.get(feature))) for q, c in pairs)


CASES = [(cmd, flag, with_model) for cmd in RUN for flag in CASE_FLAGS for with_model in (True, False)]


@pytest.mark.parametrize(("command", "flag", "with_model"), CASES,
                         ids=[f"{c}{f}-{'model' if m else 'trained'}" for c, f, m in CASES])
def test_flag_is_honoured_or_refused(saved, tmp_path, capsys, command, flag, with_model):
    flags = [a for pair in CASE_FLAGS[flag] for a in pair]
    model = ["--model", str(saved["model"])] if with_model else TRAIN
    code = _run(command, tmp_path / "out", *flags, *model)
    if (command, flag) in REFUSED:
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert code == 2 and len(err) == 1 and flag in err[0], err
        return
    assert code == 0, capsys.readouterr().err
    pairs = _pairs(command, tmp_path / "out")
    assert pairs, "no CE to check"
    broken = {f"{f} {feature}": _broken(pairs, f, feature) for f, feature in CASE_FLAGS[flag]}
    assert not any(broken.values()), f"CEs breaking each flag, of {len(pairs)}: {broken}"


@pytest.mark.parametrize("command", list(RUN))
def test_free_frees_a_feature_the_saved_schema_fixes(saved, tmp_path, command):
    """``--free income`` on a model saved with income immutable: some CE changes income
    (without the flag none does)."""
    model = ["--model", str(saved["income_fixed"])]
    assert _run(command, tmp_path / "fixed", *model) == 0
    assert _broken(_pairs(command, tmp_path / "fixed"), "--immutable", "income") == 0
    assert _run(command, tmp_path / "freed", *model, "--free", "income") == 0
    assert _broken(_pairs(command, tmp_path / "freed"), "--immutable", "income") > 0


@pytest.mark.parametrize("command", list(RUN))
def test_without_the_flags_their_rules_are_broken(saved, tmp_path, command):
    """The baseline: the same model and applicants without the tested flag break its rule
    (income raised; debt lowered once income is fixed), so every case above can fail."""
    model = ["--model", str(saved["model"])]
    assert _run(command, tmp_path / "plain", *model) == 0
    plain = _pairs(command, tmp_path / "plain")
    assert _broken(plain, "--immutable", "income") and _broken(plain, "--decrease-only", "income")
    assert _run(command, tmp_path / "fixed", *model, "--immutable", "income") == 0
    assert _broken(_pairs(command, tmp_path / "fixed"), "--increase-only", "debt")
