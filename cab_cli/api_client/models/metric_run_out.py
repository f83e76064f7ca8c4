from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.metric_run_out_status_enum import MetricRunOutStatusEnum
from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.metric_run_out_parameters import MetricRunOutParameters





T = TypeVar("T", bound="MetricRunOut")



@_attrs_define
class MetricRunOut:
    """ 
        Attributes:
            id (int):
            study (str):
            status (MetricRunOutStatusEnum): * `queued` - Queued
                * `running` - Running
                * `succeeded` - Succeeded
                * `failed` - Failed
            progress (float): fraction done, 0 to 1
            progress_message (str):
            trigger (str):
            parameters (MetricRunOutParameters):
            created_at (datetime.datetime):
            started_at (datetime.datetime | None):
            finished_at (datetime.datetime | None):
            resent_at (datetime.datetime | None): when the workers' recovery last sent the run again (no worker had taken it
                in time, or its worker stopped); null if never
            error (str): what went wrong (first line), for a failed run
            requested_by (None | str | Unset):
     """

    id: int
    study: str
    status: MetricRunOutStatusEnum
    progress: float
    progress_message: str
    trigger: str
    parameters: MetricRunOutParameters
    created_at: datetime.datetime
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    resent_at: datetime.datetime | None
    error: str
    requested_by: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.metric_run_out_parameters import MetricRunOutParameters # noqa: PLC0415
        id = self.id

        study = self.study

        status = self.status.value

        progress = self.progress

        progress_message = self.progress_message

        trigger = self.trigger

        parameters = self.parameters.to_dict()

        created_at = self.created_at.isoformat()

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

        resent_at: None | str
        if isinstance(self.resent_at, datetime.datetime):
            resent_at = self.resent_at.isoformat()
        else:
            resent_at = self.resent_at

        error = self.error

        requested_by: None | str | Unset
        if isinstance(self.requested_by, Unset):
            requested_by = UNSET
        else:
            requested_by = self.requested_by


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "study": study,
            "status": status,
            "progress": progress,
            "progress_message": progress_message,
            "trigger": trigger,
            "parameters": parameters,
            "created_at": created_at,
            "started_at": started_at,
            "finished_at": finished_at,
            "resent_at": resent_at,
            "error": error,
        })
        if requested_by is not UNSET:
            field_dict["requested_by"] = requested_by

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.metric_run_out_parameters import MetricRunOutParameters # noqa: PLC0415
        d = dict(src_dict)
        id = d.pop("id")

        study = d.pop("study")

        status = MetricRunOutStatusEnum(d.pop("status"))




        progress = d.pop("progress")

        progress_message = d.pop("progress_message")

        trigger = d.pop("trigger")

        parameters = MetricRunOutParameters.from_dict(d.pop("parameters"))




        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))




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


        def _parse_resent_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                resent_at_type_0 = datetime.datetime.fromisoformat(data)



                return resent_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        resent_at = _parse_resent_at(d.pop("resent_at"))


        error = d.pop("error")

        def _parse_requested_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        requested_by = _parse_requested_by(d.pop("requested_by", UNSET))


        metric_run_out = cls(
            id=id,
            study=study,
            status=status,
            progress=progress,
            progress_message=progress_message,
            trigger=trigger,
            parameters=parameters,
            created_at=created_at,
            started_at=started_at,
            finished_at=finished_at,
            resent_at=resent_at,
            error=error,
            requested_by=requested_by,
        )


        metric_run_out.additional_properties = d
        return metric_run_out

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
