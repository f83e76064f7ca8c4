from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="ResponseItemInRequest")



@_attrs_define
class ResponseItemInRequest:
    """ 
        Attributes:
            dataset (str):
            conversation_id (str):
            turn_index (int):
            model (str): the model slot, e.g. GPT; one of the study's slots
            text (str): stored exactly as sent (spans index into it)
            model_version (str | Unset):  Default: ''.
     """

    dataset: str
    conversation_id: str
    turn_index: int
    model: str
    text: str
    model_version: str | Unset = ''





    def to_dict(self) -> dict[str, Any]:
        dataset = self.dataset

        conversation_id = self.conversation_id

        turn_index = self.turn_index

        model = self.model

        text = self.text

        model_version = self.model_version


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "dataset": dataset,
            "conversation_id": conversation_id,
            "turn_index": turn_index,
            "model": model,
            "text": text,
        })
        if model_version is not UNSET:
            field_dict["model_version"] = model_version

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        dataset = d.pop("dataset")

        conversation_id = d.pop("conversation_id")

        turn_index = d.pop("turn_index")

        model = d.pop("model")

        text = d.pop("text")

        model_version = d.pop("model_version", UNSET)

        response_item_in_request = cls(
            dataset=dataset,
            conversation_id=conversation_id,
            turn_index=turn_index,
            model=model,
            text=text,
            model_version=model_version,
        )

        return response_item_in_request

