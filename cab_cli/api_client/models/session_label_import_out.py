from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.session_label_import_out_coders import SessionLabelImportOutCoders





T = TypeVar("T", bound="SessionLabelImportOut")



@_attrs_define
class SessionLabelImportOut:
    """ 
        Attributes:
            created (int):
            updated (int):
            unchanged (int):
            skipped (int): judgment rows of an export file (the command's option only)
            coders (SessionLabelImportOutCoders): coder name -> its counts
     """

    created: int
    updated: int
    unchanged: int
    skipped: int
    coders: SessionLabelImportOutCoders
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.session_label_import_out_coders import SessionLabelImportOutCoders # noqa: PLC0415
        created = self.created

        updated = self.updated

        unchanged = self.unchanged

        skipped = self.skipped

        coders = self.coders.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "created": created,
            "updated": updated,
            "unchanged": unchanged,
            "skipped": skipped,
            "coders": coders,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.session_label_import_out_coders import SessionLabelImportOutCoders # noqa: PLC0415
        d = dict(src_dict)
        created = d.pop("created")

        updated = d.pop("updated")

        unchanged = d.pop("unchanged")

        skipped = d.pop("skipped")

        coders = SessionLabelImportOutCoders.from_dict(d.pop("coders"))




        session_label_import_out = cls(
            created=created,
            updated=updated,
            unchanged=unchanged,
            skipped=skipped,
            coders=coders,
        )


        session_label_import_out.additional_properties = d
        return session_label_import_out

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
