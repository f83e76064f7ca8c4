from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.role_enum import RoleEnum
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="SessionLabelRowInRequest")



@_attrs_define
class SessionLabelRowInRequest:
    """ One session label in the long format (documentation of the import's rows; the importer checks them).

        Attributes:
            dataset (str):
            conversation_id (str):
            session_index (int): the session of the trajectory, 1-based
            attribute (str): a session attribute of the schema (those its kind labels, e.g. a questionnaire's items and
                total)
            score (float): a JSON number, stored exactly: a method's value as sent (never rounded or clipped); a reference
                label a whole number on the attribute's scale
            reviewer (str): the registered method's or reference coder's name
            role (RoleEnum): * `method` - method
                * `reference` - reference
            seed (int | None | Unset): a method's run seed; empty for the reference
     """

    dataset: str
    conversation_id: str
    session_index: int
    attribute: str
    score: float
    reviewer: str
    role: RoleEnum
    seed: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        dataset = self.dataset

        conversation_id = self.conversation_id

        session_index = self.session_index

        attribute = self.attribute

        score = self.score

        reviewer = self.reviewer

        role = self.role.value

        seed: int | None | Unset
        if isinstance(self.seed, Unset):
            seed = UNSET
        else:
            seed = self.seed


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "dataset": dataset,
            "conversation_id": conversation_id,
            "session_index": session_index,
            "attribute": attribute,
            "score": score,
            "reviewer": reviewer,
            "role": role,
        })
        if seed is not UNSET:
            field_dict["seed"] = seed

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        dataset = d.pop("dataset")

        conversation_id = d.pop("conversation_id")

        session_index = d.pop("session_index")

        attribute = d.pop("attribute")

        score = d.pop("score")

        reviewer = d.pop("reviewer")

        role = RoleEnum(d.pop("role"))




        def _parse_seed(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        seed = _parse_seed(d.pop("seed", UNSET))


        session_label_row_in_request = cls(
            dataset=dataset,
            conversation_id=conversation_id,
            session_index=session_index,
            attribute=attribute,
            score=score,
            reviewer=reviewer,
            role=role,
            seed=seed,
        )


        session_label_row_in_request.additional_properties = d
        return session_label_row_in_request

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
