from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ResponsesIngestOut")



@_attrs_define
class ResponsesIngestOut:
    """ 
        Attributes:
            items (int):
            created (int):
            updated (int):
            unchanged (int): identical content already stored: nothing was written
            turns_back_in_queues (int): coders' completed turns (in an open round) that a new response took out of the
                completed ones: back in their queues, to code it
     """

    items: int
    created: int
    updated: int
    unchanged: int
    turns_back_in_queues: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        items = self.items

        created = self.created

        updated = self.updated

        unchanged = self.unchanged

        turns_back_in_queues = self.turns_back_in_queues


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "items": items,
            "created": created,
            "updated": updated,
            "unchanged": unchanged,
            "turns_back_in_queues": turns_back_in_queues,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        items = d.pop("items")

        created = d.pop("created")

        updated = d.pop("updated")

        unchanged = d.pop("unchanged")

        turns_back_in_queues = d.pop("turns_back_in_queues")

        responses_ingest_out = cls(
            items=items,
            created=created,
            updated=updated,
            unchanged=unchanged,
            turns_back_in_queues=turns_back_in_queues,
        )


        responses_ingest_out.additional_properties = d
        return responses_ingest_out

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
