from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ReportAttributeOut")



@_attrs_define
class ReportAttributeOut:
    """ 
        Attributes:
            code (str):
            group (str): user, response or flag
            cluster (None | str): D, E, R or F for a risk attribute; null otherwise
            scale (list[int]):
            level (str): nominal, ordinal, interval or ratio
            unit (str): turn, response or conversation
            uiri (bool): counted in UIRI
            risk (bool): has a risk encoding
     """

    code: str
    group: str
    cluster: None | str
    scale: list[int]
    level: str
    unit: str
    uiri: bool
    risk: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        code = self.code

        group = self.group

        cluster: None | str
        cluster = self.cluster

        scale = self.scale



        level = self.level

        unit = self.unit

        uiri = self.uiri

        risk = self.risk


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "code": code,
            "group": group,
            "cluster": cluster,
            "scale": scale,
            "level": level,
            "unit": unit,
            "uiri": uiri,
            "risk": risk,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        code = d.pop("code")

        group = d.pop("group")

        def _parse_cluster(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        cluster = _parse_cluster(d.pop("cluster"))


        scale = cast(list[int], d.pop("scale"))


        level = d.pop("level")

        unit = d.pop("unit")

        uiri = d.pop("uiri")

        risk = d.pop("risk")

        report_attribute_out = cls(
            code=code,
            group=group,
            cluster=cluster,
            scale=scale,
            level=level,
            unit=unit,
            uiri=uiri,
            risk=risk,
        )


        report_attribute_out.additional_properties = d
        return report_attribute_out

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
