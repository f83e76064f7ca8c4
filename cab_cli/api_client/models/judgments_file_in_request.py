from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field
import json
from .. import types

from ..types import UNSET, Unset

from ..models.format_enum import FormatEnum
from ..types import File, FileTypes
from ..types import UNSET, Unset
from io import BytesIO






T = TypeVar("T", bound="JudgmentsFileInRequest")



@_attrs_define
class JudgmentsFileInRequest:
    """ A long-format file as a form upload (``multipart/form-data``), for clients that send files so.

        Attributes:
            file (File): judgments in the long format (docs/reference.md#long-format-of-judgments), CSV or JSON Lines, UTF-8
            format_ (FormatEnum | Unset): * `csv` - csv
                * `jsonl` - jsonl
     """

    file: File
    format_: FormatEnum | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        file = self.file.to_tuple()


        format_: str | Unset = UNSET
        if not isinstance(self.format_, Unset):
            format_ = self.format_.value



        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "file": file,
        })
        if format_ is not UNSET:
            field_dict["format"] = format_

        return field_dict


    def to_multipart(self) -> types.RequestFiles:
        files: types.RequestFiles = []

        files.append(("file", self.file.to_tuple()))



        if not isinstance(self.format_, Unset):
            files.append(("format",  (None, str(self.format_.value).encode(), "text/plain")))




        for prop_name, prop in self.additional_properties.items():
            files.append((prop_name, (None, str(prop).encode(), "text/plain")))



        return files


    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        file = File(
             payload = BytesIO(d.pop("file"))
        )




        _format_ = d.pop("format", UNSET)
        format_: FormatEnum | Unset
        if isinstance(_format_,  Unset):
            format_ = UNSET
        else:
            format_ = FormatEnum(_format_)




        judgments_file_in_request = cls(
            file=file,
            format_=format_,
        )


        judgments_file_in_request.additional_properties = d
        return judgments_file_in_request

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
