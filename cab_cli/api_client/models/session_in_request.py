from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.crisis_type_enum import CrisisTypeEnum
from ..models.session_kind_enum import SessionKindEnum
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.turn_in_request import TurnInRequest





T = TypeVar("T", bound="SessionInRequest")



@_attrs_define
class SessionInRequest:
    """ 
        Attributes:
            index (int): 1-based position in the history: 1, 2, … in order
            kind (SessionKindEnum): * `chat` - chat
                * `crisis` - crisis
                * `callback` - callback
                * `counseling` - counseling
            turns (list[TurnInRequest]): this session's turns; their indices run through the whole history
            crisis_type (CrisisTypeEnum | None | Unset): required for a crisis session; the crisis a callback returns to
                (optional); null for chat and counseling sessions

                * `SI` - SI
                * `self-harm` - self-harm
                * `anxiety` - anxiety
     """

    index: int
    kind: SessionKindEnum
    turns: list[TurnInRequest]
    crisis_type: CrisisTypeEnum | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.turn_in_request import TurnInRequest # noqa: PLC0415
        index = self.index

        kind = self.kind.value

        turns = []
        for turns_item_data in self.turns:
            turns_item = turns_item_data.to_dict()
            turns.append(turns_item)



        crisis_type: None | str | Unset
        if isinstance(self.crisis_type, Unset):
            crisis_type = UNSET
        elif isinstance(self.crisis_type, CrisisTypeEnum):
            crisis_type = self.crisis_type.value
        else:
            crisis_type = self.crisis_type


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "index": index,
            "kind": kind,
            "turns": turns,
        })
        if crisis_type is not UNSET:
            field_dict["crisis_type"] = crisis_type

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.turn_in_request import TurnInRequest # noqa: PLC0415
        d = dict(src_dict)
        index = d.pop("index")

        kind = SessionKindEnum(d.pop("kind"))




        turns = []
        _turns = d.pop("turns")
        for turns_item_data in (_turns):
            turns_item = TurnInRequest.from_dict(turns_item_data)



            turns.append(turns_item)


        def _parse_crisis_type(data: object) -> CrisisTypeEnum | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                crisis_type_type_0 = CrisisTypeEnum(data)



                return crisis_type_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CrisisTypeEnum | None | Unset, data)

        crisis_type = _parse_crisis_type(d.pop("crisis_type", UNSET))


        session_in_request = cls(
            index=index,
            kind=kind,
            turns=turns,
            crisis_type=crisis_type,
        )


        session_in_request.additional_properties = d
        return session_in_request

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
