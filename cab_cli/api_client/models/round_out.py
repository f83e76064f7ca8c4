from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.round_out_kind_enum import RoundOutKindEnum
from ..models.round_out_status_enum import RoundOutStatusEnum
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.coder_progress_out import CoderProgressOut





T = TypeVar("T", bound="RoundOut")



@_attrs_define
class RoundOut:
    """ 
        Attributes:
            name (str): calibration-N or main
            kind (RoundOutKindEnum): * `calibration` - Calibration
                * `main` - Main
            number (int):
            status (RoundOutStatusEnum): * `draft` - Draft
                * `open` - Open
                * `closed` - Closed
            opened_at (datetime.datetime | None):
            closed_at (datetime.datetime | None):
            n_items (int): turns in the round's item set
            assigned (int): assignments you can see (all, or your own)
            completed (int):
            progress (list[CoderProgressOut]):
     """

    name: str
    kind: RoundOutKindEnum
    number: int
    status: RoundOutStatusEnum
    opened_at: datetime.datetime | None
    closed_at: datetime.datetime | None
    n_items: int
    assigned: int
    completed: int
    progress: list[CoderProgressOut]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.coder_progress_out import CoderProgressOut # noqa: PLC0415
        name = self.name

        kind = self.kind.value

        number = self.number

        status = self.status.value

        opened_at: None | str
        if isinstance(self.opened_at, datetime.datetime):
            opened_at = self.opened_at.isoformat()
        else:
            opened_at = self.opened_at

        closed_at: None | str
        if isinstance(self.closed_at, datetime.datetime):
            closed_at = self.closed_at.isoformat()
        else:
            closed_at = self.closed_at

        n_items = self.n_items

        assigned = self.assigned

        completed = self.completed

        progress = []
        for progress_item_data in self.progress:
            progress_item = progress_item_data.to_dict()
            progress.append(progress_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
            "kind": kind,
            "number": number,
            "status": status,
            "opened_at": opened_at,
            "closed_at": closed_at,
            "n_items": n_items,
            "assigned": assigned,
            "completed": completed,
            "progress": progress,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.coder_progress_out import CoderProgressOut # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        kind = RoundOutKindEnum(d.pop("kind"))




        number = d.pop("number")

        status = RoundOutStatusEnum(d.pop("status"))




        def _parse_opened_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                opened_at_type_0 = datetime.datetime.fromisoformat(data)



                return opened_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        opened_at = _parse_opened_at(d.pop("opened_at"))


        def _parse_closed_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                closed_at_type_0 = datetime.datetime.fromisoformat(data)



                return closed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        closed_at = _parse_closed_at(d.pop("closed_at"))


        n_items = d.pop("n_items")

        assigned = d.pop("assigned")

        completed = d.pop("completed")

        progress = []
        _progress = d.pop("progress")
        for progress_item_data in (_progress):
            progress_item = CoderProgressOut.from_dict(progress_item_data)



            progress.append(progress_item)


        round_out = cls(
            name=name,
            kind=kind,
            number=number,
            status=status,
            opened_at=opened_at,
            closed_at=closed_at,
            n_items=n_items,
            assigned=assigned,
            completed=completed,
            progress=progress,
        )


        round_out.additional_properties = d
        return round_out

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
