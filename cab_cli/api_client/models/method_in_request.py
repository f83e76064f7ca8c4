from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="MethodInRequest")



@_attrs_define
class MethodInRequest:
    """ 
        Attributes:
            name (str): the method's coder name: the reviewer column of its long-format rows (role method)
            version (str | Unset):  Default: ''.
            prompt_id (str | Unset):  Default: ''.
     """

    name: str
    version: str | Unset = ''
    prompt_id: str | Unset = ''
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        name = self.name

        version = self.version

        prompt_id = self.prompt_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
        })
        if version is not UNSET:
            field_dict["version"] = version
        if prompt_id is not UNSET:
            field_dict["prompt_id"] = prompt_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        version = d.pop("version", UNSET)

        prompt_id = d.pop("prompt_id", UNSET)

        method_in_request = cls(
            name=name,
            version=version,
            prompt_id=prompt_id,
        )


        method_in_request.additional_properties = d
        return method_in_request

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
