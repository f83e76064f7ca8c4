from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.response_in_request import ResponseInRequest





T = TypeVar("T", bound="TurnInRequest")



@_attrs_define
class TurnInRequest:
    """ 
        Attributes:
            index (int): 1-based, through the whole conversation: 1, 2, … in order (across the sessions of a history)
            client (str): what the client says; stored exactly as sent
            therapist_reference (None | str | Unset): a human therapist's reply, when the dataset has one (null or empty:
                none) Default: ''.
            responses (list[ResponseInRequest] | Unset): the models' responses to this turn, one per model slot of the study
     """

    index: int
    client: str
    therapist_reference: None | str | Unset = ''
    responses: list[ResponseInRequest] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.response_in_request import ResponseInRequest # noqa: PLC0415
        index = self.index

        client = self.client

        therapist_reference: None | str | Unset
        if isinstance(self.therapist_reference, Unset):
            therapist_reference = UNSET
        else:
            therapist_reference = self.therapist_reference

        responses: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.responses, Unset):
            responses = []
            for responses_item_data in self.responses:
                responses_item = responses_item_data.to_dict()
                responses.append(responses_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "index": index,
            "client": client,
        })
        if therapist_reference is not UNSET:
            field_dict["therapist_reference"] = therapist_reference
        if responses is not UNSET:
            field_dict["responses"] = responses

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.response_in_request import ResponseInRequest # noqa: PLC0415
        d = dict(src_dict)
        index = d.pop("index")

        client = d.pop("client")

        def _parse_therapist_reference(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        therapist_reference = _parse_therapist_reference(d.pop("therapist_reference", UNSET))


        _responses = d.pop("responses", UNSET)
        responses: list[ResponseInRequest] | Unset = UNSET
        if _responses is not UNSET:
            responses = []
            for responses_item_data in _responses:
                responses_item = ResponseInRequest.from_dict(responses_item_data)



                responses.append(responses_item)


        turn_in_request = cls(
            index=index,
            client=client,
            therapist_reference=therapist_reference,
            responses=responses,
        )


        turn_in_request.additional_properties = d
        return turn_in_request

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
