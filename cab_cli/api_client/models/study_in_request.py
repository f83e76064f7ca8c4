from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="StudyInRequest")



@_attrs_define
class StudyInRequest:
    """ A new study: the admin's New study form as a script fills it in (``annotation.forms.StudyScriptForm``).
    Only JSON types are checked here; what a value may be is the form's rule, refused in the form's words. A
    setting left out has the form's default.

        Attributes:
            slug (str): letters, digits, - and _, at most 80 characters; not `new`; unused
            schema (str): an installed schema's slug (`cab-v1`, or a study kind's: docs/schema.md)
            model_slots (list[str]): the model slots under study, one an item (at least one, each once, at most 50
                characters, no comma)
            name (str | Unset): default: the slug
            description (str | Unset): default: empty
            show_model_names (bool | Unset): reviewers see model identities (default false)
            show_therapist_reference (bool | Unset): default true
            check_threshold (float | Unset): alert when a reviewer's bucketed agreement on check items falls below this
                share, 0 to 1 (default 0.7)
            check_min_items (int | Unset): check items scored before alerts start, 0 or more (default 20)
            experts_see_consensus (bool | Unset): experts may open a closed calibration round's consensus screen (default
                false)
            method_labels (str | Unset): human coders see automated coders' labels: `blinded`, `shown` (default `blinded`)
            reference_labels (str | Unset): human coders see the reference labels (session-rated studies): `blinded`,
                `shown` (default `blinded`)
            session_history (str | Unset): raters see a trajectory's earlier sessions (session-rated studies): `shown`,
                `hidden` (default `shown`)
            session_order (str | Unset): a rater's queue gives away each trajectory's order (session-rated studies):
                `in_order`, `blinded` (default `in_order`)
            quality_scope (str | Unset): CARE studies only: which sessions the session quality figures (ProdR, UnprodR,
                OmitR) are computed over: `episode_sessions`, `after_crisis` (default `episode_sessions`)
     """

    slug: str
    schema: str
    model_slots: list[str]
    name: str | Unset = UNSET
    description: str | Unset = UNSET
    show_model_names: bool | Unset = UNSET
    show_therapist_reference: bool | Unset = UNSET
    check_threshold: float | Unset = UNSET
    check_min_items: int | Unset = UNSET
    experts_see_consensus: bool | Unset = UNSET
    method_labels: str | Unset = UNSET
    reference_labels: str | Unset = UNSET
    session_history: str | Unset = UNSET
    session_order: str | Unset = UNSET
    quality_scope: str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        slug = self.slug

        schema = self.schema

        model_slots = self.model_slots



        name = self.name

        description = self.description

        show_model_names = self.show_model_names

        show_therapist_reference = self.show_therapist_reference

        check_threshold = self.check_threshold

        check_min_items = self.check_min_items

        experts_see_consensus = self.experts_see_consensus

        method_labels = self.method_labels

        reference_labels = self.reference_labels

        session_history = self.session_history

        session_order = self.session_order

        quality_scope = self.quality_scope


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "slug": slug,
            "schema": schema,
            "model_slots": model_slots,
        })
        if name is not UNSET:
            field_dict["name"] = name
        if description is not UNSET:
            field_dict["description"] = description
        if show_model_names is not UNSET:
            field_dict["show_model_names"] = show_model_names
        if show_therapist_reference is not UNSET:
            field_dict["show_therapist_reference"] = show_therapist_reference
        if check_threshold is not UNSET:
            field_dict["check_threshold"] = check_threshold
        if check_min_items is not UNSET:
            field_dict["check_min_items"] = check_min_items
        if experts_see_consensus is not UNSET:
            field_dict["experts_see_consensus"] = experts_see_consensus
        if method_labels is not UNSET:
            field_dict["method_labels"] = method_labels
        if reference_labels is not UNSET:
            field_dict["reference_labels"] = reference_labels
        if session_history is not UNSET:
            field_dict["session_history"] = session_history
        if session_order is not UNSET:
            field_dict["session_order"] = session_order
        if quality_scope is not UNSET:
            field_dict["quality_scope"] = quality_scope

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        slug = d.pop("slug")

        schema = d.pop("schema")

        model_slots = cast(list[str], d.pop("model_slots"))


        name = d.pop("name", UNSET)

        description = d.pop("description", UNSET)

        show_model_names = d.pop("show_model_names", UNSET)

        show_therapist_reference = d.pop("show_therapist_reference", UNSET)

        check_threshold = d.pop("check_threshold", UNSET)

        check_min_items = d.pop("check_min_items", UNSET)

        experts_see_consensus = d.pop("experts_see_consensus", UNSET)

        method_labels = d.pop("method_labels", UNSET)

        reference_labels = d.pop("reference_labels", UNSET)

        session_history = d.pop("session_history", UNSET)

        session_order = d.pop("session_order", UNSET)

        quality_scope = d.pop("quality_scope", UNSET)

        study_in_request = cls(
            slug=slug,
            schema=schema,
            model_slots=model_slots,
            name=name,
            description=description,
            show_model_names=show_model_names,
            show_therapist_reference=show_therapist_reference,
            check_threshold=check_threshold,
            check_min_items=check_min_items,
            experts_see_consensus=experts_see_consensus,
            method_labels=method_labels,
            reference_labels=reference_labels,
            session_history=session_history,
            session_order=session_order,
            quality_scope=quality_scope,
        )

        return study_in_request

