"""The service's request and response bodies (pydantic), which the OpenAPI contract at
``/openapi.json`` is generated from. Field names are the contract; extend, never rename."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

__all__ = ["APASSpec", "CertifyItemOut", "CertifyRequest", "CertifyResponse", "CertifySpec",
           "ExplainItemOut", "ExplainRequest", "ExplainResponse", "FeatureOut", "Item", "JobOut",
           "ModelInfo", "ModelList", "ModelRef", "UNICODE_CHECKED"]

#: a raw feature value: a number or a category label (objects and arrays are refused)
Value = int | float | str | bool | None


def _no_lone_surrogates(value: Any) -> None:
    """Raise ValueError when a string (key or value) anywhere in ``value`` is not valid Unicode
    (a lone surrogate such as ``"\\ud800"``: valid JSON text, but no UTF-8 encoding exists)."""
    stack = [value]
    while stack:  # iterative: the depth is the client's
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("a string is not valid Unicode (it holds a lone surrogate)") from None
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


#: the validation context of a body whose raw JSON text holds no ``\\uD800``–``\\uDFFF``
#: escape: it cannot hold a lone surrogate, so the per-string walk is skipped
UNICODE_CHECKED = {"unicode_checked": True}


class _Strict(BaseModel):
    """Request bodies: no unknown field, and strict types — a number field takes a JSON
    number (an int for a float field), never a string or a bool; a string field never a
    number (``"10"``, ``true`` and ``1`` are refused where they would have been coerced)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="after")
    def _valid_unicode(self, info: ValidationInfo) -> Any:
        # after validation: a before-validator would make pydantic turn the whole JSON input
        # into Python objects first (85 ms of a 100 000-key body); nested models check their own
        if not (info.context or {}).get("unicode_checked"):
            _no_lone_surrogates(list(self.__dict__.values()))
        return self


class Item(_Strict):
    """One applicant: an optional id (echoed back) and the raw feature record."""

    id: str | None = Field(None, max_length=200, description="a string, echoed in the response")
    features: dict[str, Value] = Field(..., description="raw feature name -> value")


class APASSpec(_Strict):
    alpha: float = Field(0.999, gt=0, lt=1, description="confidence α of Lemma 4")
    R: float = Field(0.995, gt=0, lt=1, description="robust fraction R")


class CertifySpec(_Strict):
    """Certificates to compute for each CE (beyond the method's own)."""

    delta: float | None = Field(None, gt=0, le=10, description="exact Δ-test at this δ (p = ∞)")
    apas: APASSpec | None = Field(None, description="APΔS largest δ (δ_max) at α, R")
    time_limit_s: float = Field(5.0, gt=0, le=600, description="seconds per CE for the Δ-test")


class ExplainRequest(_Strict):
    items: list[Item] = Field(..., min_length=1)
    method: str = Field("milp_robust", description="a method of GET /v1/models/{id}")
    params: dict[str, Any] = Field(default_factory=dict, description="the method's parameters")
    target_class: int | str | None = Field(None, description="index or label; default: the "
                                           "model's favourable class (GET /v1/models/{id})")
    time_limit_s: float = Field(10.0, gt=0, le=600, description="time limit per item")
    seed: int = Field(0, ge=0, lt=2**32)
    certify: CertifySpec | None = None


class ModelRef(BaseModel):
    id: str
    hash: str


class ExplainItemOut(BaseModel):
    id: str | None
    status: str = Field(..., description="found, infeasible, timeout or error (the message says "
                        "why); also already_target, not_found, no_robust_point")
    message: str = ""
    decision: dict[str, Any] | None = None
    counterfactuals: list[dict[str, Any]] = Field(default_factory=list)
    changed: list[list[str]] = Field(default_factory=list, description="per CE, the changed features")
    valid: list[bool] = Field(default_factory=list, description="per CE, the model gives the target")
    certificates: dict[str, Any] = Field(default_factory=dict)
    time_s: float = 0.0


class ExplainResponse(BaseModel):
    request_id: str
    items: list[ExplainItemOut]
    model: ModelRef
    method: str
    target_class: int


class CertifyRequest(_Strict):
    counterfactuals: list[Item] = Field(..., min_length=1)
    target_class: int | str | None = Field(None, description="index or label; default: the "
                                           "model's favourable class")
    delta: float | None = Field(None, gt=0, le=10, description="exact Δ-test at this δ")
    apas: APASSpec | None = None
    time_limit_s: float = Field(5.0, gt=0, le=600, description="seconds per CE for the Δ-test")
    seed: int = Field(0, ge=0, lt=2**32)


class CertifyItemOut(BaseModel):
    id: str | None
    valid: bool
    prediction: int
    certificates: dict[str, Any]
    time_s: float


class CertifyResponse(BaseModel):
    request_id: str
    items: list[CertifyItemOut]
    model: ModelRef
    target_class: int


class FeatureOut(BaseModel):
    name: str
    kind: str
    lower: float | None = None
    upper: float | None = None
    categories: list[Any] | None = None
    actionability: str


class ModelInfo(BaseModel):
    id: str
    hash: str
    class_names: list[str]
    favourable_class: str = Field(..., description="the label of the outcome recourse aims at "
                                  "(saved with the model, or given by `robustce serve "
                                  "--favourable`)")
    default_target_class: int = Field(..., description="the favourable class's index in "
                                      "class_names: the target when a request names none")
    features: list[FeatureOut]
    methods: list[str]
    shift_params: dict[str, str] = Field(default_factory=dict, description="per method, its "
                                         "parameter that takes the shift δ (robust methods)")
    default_method: str | None
    has_training_data: bool
    family_size: int = Field(0, description="retrained models behind the vr certificate")


class ModelList(BaseModel):
    models: list[ModelInfo]


class JobOut(BaseModel):
    job_id: str
    status: Literal["queued", "running", "done", "failed"]
    progress: dict[str, int]
    error: str | None = None
    result: ExplainResponse | None = None
