from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.complexity_enum import ComplexityEnum
from ..models.conversation_kind_enum import ConversationKindEnum
from ..models.topic_enum import TopicEnum
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.session_in_request import SessionInRequest





T = TypeVar("T", bound="ConversationSessionsRequest")



@_attrs_define
class ConversationSessionsRequest:
    """ A conversation in the ``sessions`` form: validated data as for ``ConversationIn`` (``turns`` is the history's
    turns in order) plus ``sessions``: ``[{"index", "kind", "crisis_type", "turn_indices"}]``.

        Attributes:
            dataset (str): the source corpus, e.g. CounselChat (created on first use)
            conversation_id (str): the conversation's id in its dataset
            kind (ConversationKindEnum): * `single` - single
                * `multi` - multi
                * `longitudinal` - longitudinal
            topic (TopicEnum): * `Depression` - Depression
                * `Anxiety` - Anxiety
                * `Counseling Fundamentals` - Counseling Fundamentals
                * `Intimate Relationships` - Intimate Relationships
                * `Family Conflicts` - Family Conflicts
                * `Trauma` - Trauma
                * `Self-esteem` - Self-esteem
                * `Emotional Regulation` - Emotional Regulation
                * `Sleep` - Sleep
                * `Social / Work Relationships` - Social / Work Relationships
                * `Addiction / Substance Use` - Addiction / Substance Use
                * `Grief and Loss` - Grief and Loss
                * `Spirituality` - Spirituality
                * `Sexuality` - Sexuality
                * `Nutritional / Physical Fitness` - Nutritional / Physical Fitness
                * `Diagnosis` - Diagnosis
                * `Military Issues` - Military Issues
                * `Self-harm / Suicidal Ideation` - Self-harm / Suicidal Ideation
                * `Social / Economic Well-being` - Social / Economic Well-being
                * `Motivation` - Motivation
                * `ADHD` - ADHD
                * `Sexual Harassment` - Sexual Harassment
            sessions (list[SessionInRequest]): the history's sessions, indices 1, 2, … in order (instead of turns: never
                both)
            complexity (ComplexityEnum | None | Unset): required for a single-turn conversation (kind single); must be null
                or left out for multi and longitudinal ones (their complexity is their number of turns)

                * `high` - high
                * `medium` - medium
                * `low` - low
            title (str | Unset):  Default: ''.
     """

    dataset: str
    conversation_id: str
    kind: ConversationKindEnum
    topic: TopicEnum
    sessions: list[SessionInRequest]
    complexity: ComplexityEnum | None | Unset = UNSET
    title: str | Unset = ''
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.session_in_request import SessionInRequest # noqa: PLC0415
        dataset = self.dataset

        conversation_id = self.conversation_id

        kind = self.kind.value

        topic = self.topic.value

        sessions = []
        for sessions_item_data in self.sessions:
            sessions_item = sessions_item_data.to_dict()
            sessions.append(sessions_item)



        complexity: None | str | Unset
        if isinstance(self.complexity, Unset):
            complexity = UNSET
        elif isinstance(self.complexity, ComplexityEnum):
            complexity = self.complexity.value
        else:
            complexity = self.complexity

        title = self.title


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "dataset": dataset,
            "conversation_id": conversation_id,
            "kind": kind,
            "topic": topic,
            "sessions": sessions,
        })
        if complexity is not UNSET:
            field_dict["complexity"] = complexity
        if title is not UNSET:
            field_dict["title"] = title

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.session_in_request import SessionInRequest # noqa: PLC0415
        d = dict(src_dict)
        dataset = d.pop("dataset")

        conversation_id = d.pop("conversation_id")

        kind = ConversationKindEnum(d.pop("kind"))




        topic = TopicEnum(d.pop("topic"))




        sessions = []
        _sessions = d.pop("sessions")
        for sessions_item_data in (_sessions):
            sessions_item = SessionInRequest.from_dict(sessions_item_data)



            sessions.append(sessions_item)


        def _parse_complexity(data: object) -> ComplexityEnum | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                complexity_type_0 = ComplexityEnum(data)



                return complexity_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ComplexityEnum | None | Unset, data)

        complexity = _parse_complexity(d.pop("complexity", UNSET))


        title = d.pop("title", UNSET)

        conversation_sessions_request = cls(
            dataset=dataset,
            conversation_id=conversation_id,
            kind=kind,
            topic=topic,
            sessions=sessions,
            complexity=complexity,
            title=title,
        )


        conversation_sessions_request.additional_properties = d
        return conversation_sessions_request

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
