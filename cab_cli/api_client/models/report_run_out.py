from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.report_run_out_parameters import ReportRunOutParameters





T = TypeVar("T", bound="ReportRunOut")



@_attrs_define
class ReportRunOut:
    """ 
        Attributes:
            id (int):
            trigger (str):
            parameters (ReportRunOutParameters):
            requested_at (datetime.datetime):
            started_at (datetime.datetime | None):
            finished_at (datetime.datetime | None):
     """

    id: int
    trigger: str
    parameters: ReportRunOutParameters
    requested_at: datetime.datetime
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.report_run_out_parameters import ReportRunOutParameters # noqa: PLC0415
        id = self.id

        trigger = self.trigger

        parameters = self.parameters.to_dict()

        requested_at = self.requested_at.isoformat()

        started_at: None | str
        if isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        finished_at: None | str
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "trigger": trigger,
            "parameters": parameters,
            "requested_at": requested_at,
            "started_at": started_at,
            "finished_at": finished_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.report_run_out_parameters import ReportRunOutParameters # noqa: PLC0415
        d = dict(src_dict)
        id = d.pop("id")

        trigger = d.pop("trigger")

        parameters = ReportRunOutParameters.from_dict(d.pop("parameters"))




        requested_at = datetime.datetime.fromisoformat(d.pop("requested_at"))




        def _parse_started_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = datetime.datetime.fromisoformat(data)



                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        started_at = _parse_started_at(d.pop("started_at"))


        def _parse_finished_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)



                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))


        report_run_out = cls(
            id=id,
            trigger=trigger,
            parameters=parameters,
            requested_at=requested_at,
            started_at=started_at,
            finished_at=finished_at,
        )


        report_run_out.additional_properties = d
        return report_run_out

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
