from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.session_label_row_in_request import SessionLabelRowInRequest





T = TypeVar("T", bound="SessionLabelsInRequest")



@_attrs_define
class SessionLabelsInRequest:
    """ 
        Attributes:
            rows (list[SessionLabelRowInRequest]): at most 50,000 rows a request
     """

    rows: list[SessionLabelRowInRequest]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.session_label_row_in_request import SessionLabelRowInRequest # noqa: PLC0415
        rows = []
        for rows_item_data in self.rows:
            rows_item = rows_item_data.to_dict()
            rows.append(rows_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "rows": rows,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.session_label_row_in_request import SessionLabelRowInRequest # noqa: PLC0415
        d = dict(src_dict)
        rows = []
        _rows = d.pop("rows")
        for rows_item_data in (_rows):
            rows_item = SessionLabelRowInRequest.from_dict(rows_item_data)



            rows.append(rows_item)


        session_labels_in_request = cls(
            rows=rows,
        )


        session_labels_in_request.additional_properties = d
        return session_labels_in_request

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
