from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime






T = TypeVar("T", bound="AssignmentOut")



@_attrs_define
class AssignmentOut:
    """ 
        Attributes:
            id (int):
            round_ (str):
            reviewer (str):
            position (int):
            dataset (str):
            conversation_id (None | str): the conversation's id; null for reviewers and experts of a study whose session
                order is blinded
            turn_index (int | None): the turn's index; null for reviewers and experts of a study whose session order is
                blinded
            is_check_item (bool | None): null for reviewers: check items stay hidden
            completed_at (datetime.datetime | None):
            active_seconds (int):
     """

    id: int
    round_: str
    reviewer: str
    position: int
    dataset: str
    conversation_id: None | str
    turn_index: int | None
    is_check_item: bool | None
    completed_at: datetime.datetime | None
    active_seconds: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        round_ = self.round_

        reviewer = self.reviewer

        position = self.position

        dataset = self.dataset

        conversation_id: None | str
        conversation_id = self.conversation_id

        turn_index: int | None
        turn_index = self.turn_index

        is_check_item: bool | None
        is_check_item = self.is_check_item

        completed_at: None | str
        if isinstance(self.completed_at, datetime.datetime):
            completed_at = self.completed_at.isoformat()
        else:
            completed_at = self.completed_at

        active_seconds = self.active_seconds


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "round": round_,
            "reviewer": reviewer,
            "position": position,
            "dataset": dataset,
            "conversation_id": conversation_id,
            "turn_index": turn_index,
            "is_check_item": is_check_item,
            "completed_at": completed_at,
            "active_seconds": active_seconds,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        round_ = d.pop("round")

        reviewer = d.pop("reviewer")

        position = d.pop("position")

        dataset = d.pop("dataset")

        def _parse_conversation_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        conversation_id = _parse_conversation_id(d.pop("conversation_id"))


        def _parse_turn_index(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        turn_index = _parse_turn_index(d.pop("turn_index"))


        def _parse_is_check_item(data: object) -> bool | None:
            if data is None:
                return data
            return cast(bool | None, data)

        is_check_item = _parse_is_check_item(d.pop("is_check_item"))


        def _parse_completed_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                completed_at_type_0 = datetime.datetime.fromisoformat(data)



                return completed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        completed_at = _parse_completed_at(d.pop("completed_at"))


        active_seconds = d.pop("active_seconds")

        assignment_out = cls(
            id=id,
            round_=round_,
            reviewer=reviewer,
            position=position,
            dataset=dataset,
            conversation_id=conversation_id,
            turn_index=turn_index,
            is_check_item=is_check_item,
            completed_at=completed_at,
            active_seconds=active_seconds,
        )


        assignment_out.additional_properties = d
        return assignment_out

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
