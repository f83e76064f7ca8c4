from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.report_input_out_dropped import ReportInputOutDropped





T = TypeVar("T", bound="ReportInputOut")



@_attrs_define
class ReportInputOut:
    """ 
        Attributes:
            judgments (int): judgments read: used + every dropped count
            used (int):
            dropped (ReportInputOutDropped): reason -> judgments left out
            rounds (list[str]):
            fingerprint (str | Unset): sha256:… of the judgment and span rows read (docs/metrics.md#provenance); missing
                from reports computed before it
     """

    judgments: int
    used: int
    dropped: ReportInputOutDropped
    rounds: list[str]
    fingerprint: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.report_input_out_dropped import ReportInputOutDropped # noqa: PLC0415
        judgments = self.judgments

        used = self.used

        dropped = self.dropped.to_dict()

        rounds = self.rounds



        fingerprint = self.fingerprint


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "judgments": judgments,
            "used": used,
            "dropped": dropped,
            "rounds": rounds,
        })
        if fingerprint is not UNSET:
            field_dict["fingerprint"] = fingerprint

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.report_input_out_dropped import ReportInputOutDropped # noqa: PLC0415
        d = dict(src_dict)
        judgments = d.pop("judgments")

        used = d.pop("used")

        dropped = ReportInputOutDropped.from_dict(d.pop("dropped"))




        rounds = cast(list[str], d.pop("rounds"))


        fingerprint = d.pop("fingerprint", UNSET)

        report_input_out = cls(
            judgments=judgments,
            used=used,
            dropped=dropped,
            rounds=rounds,
            fingerprint=fingerprint,
        )


        report_input_out.additional_properties = d
        return report_input_out

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
