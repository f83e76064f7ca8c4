from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="ItemErrorOut")



@_attrs_define
class ItemErrorOut:
    """ 
        Attributes:
            field (str):
            message (str):
            index (int | Unset): 0-based position of the item in the request
            line (int | Unset): 1-based line of an uploaded file (CSV: header is 1)
     """

    field: str
    message: str
    index: int | Unset = UNSET
    line: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        field = self.field

        message = self.message

        index = self.index

        line = self.line


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "field": field,
            "message": message,
        })
        if index is not UNSET:
            field_dict["index"] = index
        if line is not UNSET:
            field_dict["line"] = line

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        field = d.pop("field")

        message = d.pop("message")

        index = d.pop("index", UNSET)

        line = d.pop("line", UNSET)

        item_error_out = cls(
            field=field,
            message=message,
            index=index,
            line=line,
        )


        item_error_out.additional_properties = d
        return item_error_out

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
