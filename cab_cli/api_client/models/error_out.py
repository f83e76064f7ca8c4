from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.error_out_fields import ErrorOutFields
  from ..models.item_error_out import ItemErrorOut





T = TypeVar("T", bound="ErrorOut")



@_attrs_define
class ErrorOut:
    """ 
        Attributes:
            detail (str):
            fields (ErrorOutFields | Unset): field -> its messages (always a list), for a malformed parameter or body; a
                nested field is named by its path (turns[0].index), an error of no one field is under detail
            error_count (int | Unset):
            errors (list[ItemErrorOut] | Unset): every problem, item by item (at most 1000 shown)
     """

    detail: str
    fields: ErrorOutFields | Unset = UNSET
    error_count: int | Unset = UNSET
    errors: list[ItemErrorOut] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.error_out_fields import ErrorOutFields # noqa: PLC0415
        from ..models.item_error_out import ItemErrorOut # noqa: PLC0415
        detail = self.detail

        fields: dict[str, Any] | Unset = UNSET
        if not isinstance(self.fields, Unset):
            fields = self.fields.to_dict()

        error_count = self.error_count

        errors: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.errors, Unset):
            errors = []
            for errors_item_data in self.errors:
                errors_item = errors_item_data.to_dict()
                errors.append(errors_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "detail": detail,
        })
        if fields is not UNSET:
            field_dict["fields"] = fields
        if error_count is not UNSET:
            field_dict["error_count"] = error_count
        if errors is not UNSET:
            field_dict["errors"] = errors

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_out_fields import ErrorOutFields # noqa: PLC0415
        from ..models.item_error_out import ItemErrorOut # noqa: PLC0415
        d = dict(src_dict)
        detail = d.pop("detail")

        _fields = d.pop("fields", UNSET)
        fields: ErrorOutFields | Unset
        if isinstance(_fields,  Unset):
            fields = UNSET
        else:
            fields = ErrorOutFields.from_dict(_fields)




        error_count = d.pop("error_count", UNSET)

        _errors = d.pop("errors", UNSET)
        errors: list[ItemErrorOut] | Unset = UNSET
        if _errors is not UNSET:
            errors = []
            for errors_item_data in _errors:
                errors_item = ItemErrorOut.from_dict(errors_item_data)



                errors.append(errors_item)


        error_out = cls(
            detail=detail,
            fields=fields,
            error_count=error_count,
            errors=errors,
        )


        error_out.additional_properties = d
        return error_out

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
