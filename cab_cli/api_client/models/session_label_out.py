from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime






T = TypeVar("T", bound="SessionLabelOut")



@_attrs_define
class SessionLabelOut:
    """ 
        Attributes:
            id (int):
            reviewer (str):
            role (str):
            seed (int | None):
            dataset (str):
            conversation_id (str):
            session_index (int):
            attribute (str):
            score (float):
            updated_at (datetime.datetime):
     """

    id: int
    reviewer: str
    role: str
    seed: int | None
    dataset: str
    conversation_id: str
    session_index: int
    attribute: str
    score: float
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        reviewer = self.reviewer

        role = self.role

        seed: int | None
        seed = self.seed

        dataset = self.dataset

        conversation_id = self.conversation_id

        session_index = self.session_index

        attribute = self.attribute

        score = self.score

        updated_at = self.updated_at.isoformat()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "reviewer": reviewer,
            "role": role,
            "seed": seed,
            "dataset": dataset,
            "conversation_id": conversation_id,
            "session_index": session_index,
            "attribute": attribute,
            "score": score,
            "updated_at": updated_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        reviewer = d.pop("reviewer")

        role = d.pop("role")

        def _parse_seed(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        seed = _parse_seed(d.pop("seed"))


        dataset = d.pop("dataset")

        conversation_id = d.pop("conversation_id")

        session_index = d.pop("session_index")

        attribute = d.pop("attribute")

        score = d.pop("score")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))




        session_label_out = cls(
            id=id,
            reviewer=reviewer,
            role=role,
            seed=seed,
            dataset=dataset,
            conversation_id=conversation_id,
            session_index=session_index,
            attribute=attribute,
            score=score,
            updated_at=updated_at,
        )


        session_label_out.additional_properties = d
        return session_label_out

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
