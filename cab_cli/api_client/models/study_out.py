from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.study_out_status_enum import StudyOutStatusEnum
from typing import cast






T = TypeVar("T", bound="StudyOut")



@_attrs_define
class StudyOut:
    """ 
        Attributes:
            slug (str):
            name (str):
            description (str):
            status (StudyOutStatusEnum): * `setup` - Setting up
                * `open` - Open
                * `archived` - Archived
            schema (str):
            schema_version (int):
            model_slots (list[str] | None): null for a reviewer of a blinded study
            is_synthetic (bool):
            rounds (list[str]):
     """

    slug: str
    name: str
    description: str
    status: StudyOutStatusEnum
    schema: str
    schema_version: int
    model_slots: list[str] | None
    is_synthetic: bool
    rounds: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        slug = self.slug

        name = self.name

        description = self.description

        status = self.status.value

        schema = self.schema

        schema_version = self.schema_version

        model_slots: list[str] | None
        if isinstance(self.model_slots, list):
            model_slots = self.model_slots


        else:
            model_slots = self.model_slots

        is_synthetic = self.is_synthetic

        rounds = self.rounds




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "slug": slug,
            "name": name,
            "description": description,
            "status": status,
            "schema": schema,
            "schema_version": schema_version,
            "model_slots": model_slots,
            "is_synthetic": is_synthetic,
            "rounds": rounds,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        slug = d.pop("slug")

        name = d.pop("name")

        description = d.pop("description")

        status = StudyOutStatusEnum(d.pop("status"))




        schema = d.pop("schema")

        schema_version = d.pop("schema_version")

        def _parse_model_slots(data: object) -> list[str] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                model_slots_type_0 = cast(list[str], data)

                return model_slots_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None, data)

        model_slots = _parse_model_slots(d.pop("model_slots"))


        is_synthetic = d.pop("is_synthetic")

        rounds = cast(list[str], d.pop("rounds"))


        study_out = cls(
            slug=slug,
            name=name,
            description=description,
            status=status,
            schema=schema,
            schema_version=schema_version,
            model_slots=model_slots,
            is_synthetic=is_synthetic,
            rounds=rounds,
        )


        study_out.additional_properties = d
        return study_out

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
