from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.response_out import ResponseOut





T = TypeVar("T", bound="TurnOut")



@_attrs_define
class TurnOut:
    """ 
        Attributes:
            index (int):
            session_index (int | None): the session the turn is in; null without sessions
            client (str):
            therapist_reference (str): empty when the dataset has none
            responses (list[ResponseOut]): under the study's model slots, by slot
     """

    index: int
    session_index: int | None
    client: str
    therapist_reference: str
    responses: list[ResponseOut]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.response_out import ResponseOut # noqa: PLC0415
        index = self.index

        session_index: int | None
        session_index = self.session_index

        client = self.client

        therapist_reference = self.therapist_reference

        responses = []
        for responses_item_data in self.responses:
            responses_item = responses_item_data.to_dict()
            responses.append(responses_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "index": index,
            "session_index": session_index,
            "client": client,
            "therapist_reference": therapist_reference,
            "responses": responses,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.response_out import ResponseOut # noqa: PLC0415
        d = dict(src_dict)
        index = d.pop("index")

        def _parse_session_index(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        session_index = _parse_session_index(d.pop("session_index"))


        client = d.pop("client")

        therapist_reference = d.pop("therapist_reference")

        responses = []
        _responses = d.pop("responses")
        for responses_item_data in (_responses):
            responses_item = ResponseOut.from_dict(responses_item_data)



            responses.append(responses_item)


        turn_out = cls(
            index=index,
            session_index=session_index,
            client=client,
            therapist_reference=therapist_reference,
            responses=responses,
        )


        turn_out.additional_properties = d
        return turn_out

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
