from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ConversationsIngestOut")



@_attrs_define
class ConversationsIngestOut:
    """ 
        Attributes:
            conversations_created (int):
            conversations_updated (int):
            conversations_unchanged (int):
            turns_created (int):
            responses_created (int):
            responses_updated (int):
            datasets_created (list[str]):
            sessions_created (int): sessions of histories sent in the sessions form
            sessions_updated (int): sessions whose kind, crisis type or turns changed
            turns_back_in_queues (int): coders' completed turns (in an open round) that a new response took out of the
                completed ones: back in their queues, to code it
     """

    conversations_created: int
    conversations_updated: int
    conversations_unchanged: int
    turns_created: int
    responses_created: int
    responses_updated: int
    datasets_created: list[str]
    sessions_created: int
    sessions_updated: int
    turns_back_in_queues: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        conversations_created = self.conversations_created

        conversations_updated = self.conversations_updated

        conversations_unchanged = self.conversations_unchanged

        turns_created = self.turns_created

        responses_created = self.responses_created

        responses_updated = self.responses_updated

        datasets_created = self.datasets_created



        sessions_created = self.sessions_created

        sessions_updated = self.sessions_updated

        turns_back_in_queues = self.turns_back_in_queues


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "conversations_created": conversations_created,
            "conversations_updated": conversations_updated,
            "conversations_unchanged": conversations_unchanged,
            "turns_created": turns_created,
            "responses_created": responses_created,
            "responses_updated": responses_updated,
            "datasets_created": datasets_created,
            "sessions_created": sessions_created,
            "sessions_updated": sessions_updated,
            "turns_back_in_queues": turns_back_in_queues,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        conversations_created = d.pop("conversations_created")

        conversations_updated = d.pop("conversations_updated")

        conversations_unchanged = d.pop("conversations_unchanged")

        turns_created = d.pop("turns_created")

        responses_created = d.pop("responses_created")

        responses_updated = d.pop("responses_updated")

        datasets_created = cast(list[str], d.pop("datasets_created"))


        sessions_created = d.pop("sessions_created")

        sessions_updated = d.pop("sessions_updated")

        turns_back_in_queues = d.pop("turns_back_in_queues")

        conversations_ingest_out = cls(
            conversations_created=conversations_created,
            conversations_updated=conversations_updated,
            conversations_unchanged=conversations_unchanged,
            turns_created=turns_created,
            responses_created=responses_created,
            responses_updated=responses_updated,
            datasets_created=datasets_created,
            sessions_created=sessions_created,
            sessions_updated=sessions_updated,
            turns_back_in_queues=turns_back_in_queues,
        )


        conversations_ingest_out.additional_properties = d
        return conversations_ingest_out

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
