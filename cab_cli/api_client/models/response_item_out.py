from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime






T = TypeVar("T", bound="ResponseItemOut")



@_attrs_define
class ResponseItemOut:
    """ A response as it was ingested (``POST …/responses/``), with when it last changed.

        Attributes:
            dataset (str):
            conversation_id (str):
            turn_index (int):
            model (str):
            model_version (str):
            text (str): exactly as it was sent (spans index into it)
            updated_at (datetime.datetime):
     """

    dataset: str
    conversation_id: str
    turn_index: int
    model: str
    model_version: str
    text: str
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        dataset = self.dataset

        conversation_id = self.conversation_id

        turn_index = self.turn_index

        model = self.model

        model_version = self.model_version

        text = self.text

        updated_at = self.updated_at.isoformat()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "dataset": dataset,
            "conversation_id": conversation_id,
            "turn_index": turn_index,
            "model": model,
            "model_version": model_version,
            "text": text,
            "updated_at": updated_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        dataset = d.pop("dataset")

        conversation_id = d.pop("conversation_id")

        turn_index = d.pop("turn_index")

        model = d.pop("model")

        model_version = d.pop("model_version")

        text = d.pop("text")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))




        response_item_out = cls(
            dataset=dataset,
            conversation_id=conversation_id,
            turn_index=turn_index,
            model=model,
            model_version=model_version,
            text=text,
            updated_at=updated_at,
        )


        response_item_out.additional_properties = d
        return response_item_out

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
