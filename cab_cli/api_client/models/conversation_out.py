from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.complexity_enum import ComplexityEnum
from ..models.conversation_kind_enum import ConversationKindEnum
from typing import cast

if TYPE_CHECKING:
  from ..models.session_out import SessionOut
  from ..models.turn_out import TurnOut





T = TypeVar("T", bound="ConversationOut")



@_attrs_define
class ConversationOut:
    """ A conversation of the study with its texts: the fields it was ingested with, its turns in order (each with its
    session, if any, and the responses of the study's model slots) and its sessions (empty unless it was sent in the
    sessions form).

        Attributes:
            dataset (str):
            conversation_id (str):
            kind (ConversationKindEnum): * `single` - single
                * `multi` - multi
                * `longitudinal` - longitudinal
            topic (str):
            complexity (ComplexityEnum | None):
            title (str):
            sessions (list[SessionOut]):
            turns (list[TurnOut]):
     """

    dataset: str
    conversation_id: str
    kind: ConversationKindEnum
    topic: str
    complexity: ComplexityEnum | None
    title: str
    sessions: list[SessionOut]
    turns: list[TurnOut]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.session_out import SessionOut # noqa: PLC0415
        from ..models.turn_out import TurnOut # noqa: PLC0415
        dataset = self.dataset

        conversation_id = self.conversation_id

        kind = self.kind.value

        topic = self.topic

        complexity: None | str
        if isinstance(self.complexity, ComplexityEnum):
            complexity = self.complexity.value
        else:
            complexity = self.complexity

        title = self.title

        sessions = []
        for sessions_item_data in self.sessions:
            sessions_item = sessions_item_data.to_dict()
            sessions.append(sessions_item)



        turns = []
        for turns_item_data in self.turns:
            turns_item = turns_item_data.to_dict()
            turns.append(turns_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "dataset": dataset,
            "conversation_id": conversation_id,
            "kind": kind,
            "topic": topic,
            "complexity": complexity,
            "title": title,
            "sessions": sessions,
            "turns": turns,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.session_out import SessionOut # noqa: PLC0415
        from ..models.turn_out import TurnOut # noqa: PLC0415
        d = dict(src_dict)
        dataset = d.pop("dataset")

        conversation_id = d.pop("conversation_id")

        kind = ConversationKindEnum(d.pop("kind"))




        topic = d.pop("topic")

        def _parse_complexity(data: object) -> ComplexityEnum | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                complexity_type_0 = ComplexityEnum(data)



                return complexity_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ComplexityEnum | None, data)

        complexity = _parse_complexity(d.pop("complexity"))


        title = d.pop("title")

        sessions = []
        _sessions = d.pop("sessions")
        for sessions_item_data in (_sessions):
            sessions_item = SessionOut.from_dict(sessions_item_data)



            sessions.append(sessions_item)


        turns = []
        _turns = d.pop("turns")
        for turns_item_data in (_turns):
            turns_item = TurnOut.from_dict(turns_item_data)



            turns.append(turns_item)


        conversation_out = cls(
            dataset=dataset,
            conversation_id=conversation_id,
            kind=kind,
            topic=topic,
            complexity=complexity,
            title=title,
            sessions=sessions,
            turns=turns,
        )


        conversation_out.additional_properties = d
        return conversation_out

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
