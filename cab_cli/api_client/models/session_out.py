from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.crisis_type_enum import CrisisTypeEnum
from ..models.session_kind_enum import SessionKindEnum
from typing import cast






T = TypeVar("T", bound="SessionOut")



@_attrs_define
class SessionOut:
    """ 
        Attributes:
            index (int):
            kind (SessionKindEnum): * `chat` - chat
                * `crisis` - crisis
                * `callback` - callback
                * `counseling` - counseling
            crisis_type (CrisisTypeEnum | None):
     """

    index: int
    kind: SessionKindEnum
    crisis_type: CrisisTypeEnum | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        index = self.index

        kind = self.kind.value

        crisis_type: None | str
        if isinstance(self.crisis_type, CrisisTypeEnum):
            crisis_type = self.crisis_type.value
        else:
            crisis_type = self.crisis_type


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "index": index,
            "kind": kind,
            "crisis_type": crisis_type,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        index = d.pop("index")

        kind = SessionKindEnum(d.pop("kind"))




        def _parse_crisis_type(data: object) -> CrisisTypeEnum | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                crisis_type_type_0 = CrisisTypeEnum(data)



                return crisis_type_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CrisisTypeEnum | None, data)

        crisis_type = _parse_crisis_type(d.pop("crisis_type"))


        session_out = cls(
            index=index,
            kind=kind,
            crisis_type=crisis_type,
        )


        session_out.additional_properties = d
        return session_out

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
