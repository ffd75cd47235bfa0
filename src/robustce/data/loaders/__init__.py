"""Loaders for the benchmark datasets of the robust-recourse literature.

Each loader reads its file(s) through :func:`robustce.data.download.ensure_file` (local copy
verified by checksum, else downloaded), builds the raw feature frame, integer labels
0..K-1 and a :class:`~robustce.data.schema.Schema` (kinds from the source catalogues, the
usual immutable features marked), and returns a :class:`~robustce.data.dataset.Dataset`.

Label conventions follow the papers that use each file; every description says which label
is class 1 (``Dataset.class_names[1]``) and which is favourable (``Dataset.favourable``: the
outcome recourse asks for; class 1 unless a loader says otherwise). Numeric bounds are the
observed range of the rows a loader reads (for CARLA ``split=`` loads: of train and test
together, so both splits share one schema). Nothing is scaled here; the
:class:`~robustce.data.encoder.Encoder` does that.

``CATALOG`` lists the file datasets; :mod:`robustce.data.registry` registers them;
:func:`files_for` names the files one call of a loader reads.

One module per dataset family (:mod:`~robustce.data.loaders.carla`, ``numeric``, ``german``,
``sba``, ``taiwan``, ``student``, ``rocoursenet``, ``online_news``; the shared helpers in
``_common``); every loader, description and constant they had here before the split
(issue 48) is re-exported: ``loaders.load_adult`` still works.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from robustce.data.dataset import Dataset
from robustce.data.download import LOAN_YEARS
from robustce.data.loaders._common import PathLike  # noqa: F401 - re-exported
from robustce.data.loaders.carla import (
    ADULT_DESCRIPTION,
    COMPAS_DESCRIPTION,
    GMSC_DESCRIPTION,
    HELOC_DESCRIPTION,
    _carla_split_files,
    load_adult,
    load_compas,
    load_give_me_some_credit,
    load_heloc,
)
from robustce.data.loaders.german import (  # noqa: F401 - re-exported
    APAS_CREDIT_DESCRIPTION,
    APAS_CREDIT_SHIFT_DESCRIPTION,
    GERMAN_COLUMNS,
    GERMAN_CORRECTED_DESCRIPTION,
    GERMAN_DESCRIPTION,
    GERMAN_RAW_DESCRIPTION,
    load_apas_credit,
    load_apas_credit_shift,
    load_german,
    load_german_corrected,
    load_german_raw,
)
from robustce.data.loaders.numeric import (
    DIABETES_DESCRIPTION,
    NO2_DESCRIPTION,
    SPAM_DESCRIPTION,
    SPAMBASE_DESCRIPTION,
    load_diabetes,
    load_no2,
    load_spam,
    load_spambase,
)
from robustce.data.loaders.online_news import ONLINE_NEWS_DESCRIPTION, load_online_news
from robustce.data.loaders.rocoursenet import (  # noqa: F401 - re-exported
    LOAN_DESCRIPTION,
    ROCOURSENET_GERMAN_DESCRIPTION,
    ROCOURSENET_STUDENT_DESCRIPTION,
    US_STATES,
    _check_years,
    _loan_files,
    load_loan,
    load_rocoursenet_german,
    load_rocoursenet_student,
)
from robustce.data.loaders.sba import (  # noqa: F401 - re-exported
    SBA_DESCRIPTION,
    SBA_LEAKS,
    SBA_ROAR_DROP,
    load_sba,
)
from robustce.data.loaders.student import STUDENT_DESCRIPTION, load_student, load_student_math
from robustce.data.loaders.taiwan import (
    TAIWAN_DESCRIPTION,
    TAIWAN_PROCESSED_DESCRIPTION,
    load_taiwan_credit,
    load_taiwan_credit_processed,
)

__all__ = ["CATALOG", "LoaderInfo", "files_for"]

class LoaderInfo(NamedTuple):
    loader: Callable[..., Dataset]
    description: str
    files: tuple[str, ...]


def _carla_files(name: str) -> tuple[str, ...]:
    return _carla_split_files(name, None) + _carla_split_files(name, "train")


#: the catalogue's CARLA sets (loaders with a ``split`` parameter)
_CARLA_NAMES = ("adult", "compas", "give_me_some_credit", "heloc")


CATALOG: dict[str, LoaderInfo] = {
    "adult": LoaderInfo(load_adult, ADULT_DESCRIPTION, _carla_files("adult")),
    "compas": LoaderInfo(load_compas, COMPAS_DESCRIPTION, _carla_files("compas")),
    "give_me_some_credit": LoaderInfo(load_give_me_some_credit, GMSC_DESCRIPTION,
                                      _carla_files("give_me_some_credit")),
    "heloc": LoaderInfo(load_heloc, HELOC_DESCRIPTION, _carla_files("heloc")),
    "diabetes": LoaderInfo(load_diabetes, DIABETES_DESCRIPTION, ("diabetes/diabetes.csv",)),
    "no2": LoaderInfo(load_no2, NO2_DESCRIPTION, ("no2/no2.csv",)),
    "german": LoaderInfo(load_german, GERMAN_DESCRIPTION, ("german_credit/german.csv",)),
    "german_corrected": LoaderInfo(load_german_corrected, GERMAN_CORRECTED_DESCRIPTION,
                                   ("german_credit/corrected_german.csv",)),
    "german_raw": LoaderInfo(load_german_raw, GERMAN_RAW_DESCRIPTION,
                             ("german_credit/german.data",)),
    "apas_credit": LoaderInfo(load_apas_credit, APAS_CREDIT_DESCRIPTION,
                              ("german_credit/german.data",)),
    "apas_credit_shift": LoaderInfo(load_apas_credit_shift, APAS_CREDIT_SHIFT_DESCRIPTION,
                                    ("german_credit/corrected_german.csv",)),
    "spambase": LoaderInfo(load_spambase, SPAMBASE_DESCRIPTION, ("spambase/spambase.csv",)),
    "spam": LoaderInfo(load_spam, SPAM_DESCRIPTION, ("spambase/spam.csv",)),
    "sba": LoaderInfo(load_sba, SBA_DESCRIPTION, ("sba/SBAcase.11.13.17.csv",)),
    "taiwan_credit": LoaderInfo(load_taiwan_credit, TAIWAN_DESCRIPTION,
                                ("credit_default_taiwan/credit_card.csv",)),
    "taiwan_credit_processed": LoaderInfo(load_taiwan_credit_processed,
                                          TAIWAN_PROCESSED_DESCRIPTION,
                                          ("credit_default_taiwan/credit_processed.csv",)),
    "student": LoaderInfo(load_student,
                          STUDENT_DESCRIPTION.format(course="Portuguese", rows=649),
                          ("student/student-por.csv",)),
    "student_math": LoaderInfo(load_student_math,
                               STUDENT_DESCRIPTION.format(course="maths", rows=395),
                               ("student/student-mat.csv",)),
    "rocoursenet_german": LoaderInfo(load_rocoursenet_german, ROCOURSENET_GERMAN_DESCRIPTION,
                                     ("rocoursenet/german_credit/org.csv",
                                      "rocoursenet/german_credit/upt.csv")),
    "rocoursenet_student": LoaderInfo(load_rocoursenet_student,
                                      ROCOURSENET_STUDENT_DESCRIPTION,
                                      ("rocoursenet/student/gp.csv",
                                       "rocoursenet/student/ms.csv")),
    "loan": LoaderInfo(load_loan, LOAN_DESCRIPTION, _loan_files(LOAN_YEARS)),
    "online_news": LoaderInfo(load_online_news, ONLINE_NEWS_DESCRIPTION,
                              ("online_news/OnlineNewsPopularity.csv",)),
}


def files_for(name: str, params: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The files the catalogue's loader ``name`` reads when called with ``params`` (its
    keyword arguments): ``years`` of ``loan``, ``split`` of the CARLA sets; every file of
    its entry for the others. Bad ``years`` or ``split`` raise as the loader does."""
    params = params or {}
    if name == "loan":
        return _loan_files(_check_years(params.get("years")))
    if name in _CARLA_NAMES:
        return _carla_split_files(name, params.get("split"))
    return CATALOG[name].files
