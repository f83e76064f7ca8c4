from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.span_out import SpanOut





T = TypeVar("T", bound="JudgmentOut")



@_attrs_define
class JudgmentOut:
    """ One judgment in the long format (docs/reference.md#long-format-of-judgments), plus ids for staff and the
    response's handle.

    Reviewers and experts never see a judgment's or a response's id: both follow the order things were created in,
    which is the model-slot order of each turn. They see the response's handle instead, the name it has on their
    own turn page (``data-response``).

        Attributes:
            id (int | None): null for reviewers and experts
            study (str):
            round_ (str):
            reviewer (str):
            is_gold (bool):
            dataset (str):
            conversation_id (None | str): the conversation's id; null for reviewers and experts of a study whose session
                order is blinded
            turn_index (int | None): the turn's index, null for a judgment of a session or a conversation; null for
                reviewers and experts of a study whose session order is blinded
            session_index (int | None): the session of a longitudinal history the judgment is on, or its turn is in, as in
                the exports; null for a judgment not on a session, and for reviewers and experts of a study whose session order
                is blinded
            model (None | str): null for user-level attributes, and for reviewers of a blinded study
            response (None | str): the response's handle on the turn page of the judgment's coder; null for user-level
                attributes
            response_id (int | None): null for reviewers and experts, and for user-level attributes
            attribute (str):
            score (int):
            instance_count (int | None):
            spans (list[SpanOut]):
            role (str): whose coding it is, as in the exports: reviewer, expert (an expert's own coding, and every gold
                judgment) or method
            updated_at (datetime.datetime): to the microsecond for staff, whole seconds for reviewers and experts
     """

    id: int | None
    study: str
    round_: str
    reviewer: str
    is_gold: bool
    dataset: str
    conversation_id: None | str
    turn_index: int | None
    session_index: int | None
    model: None | str
    response: None | str
    response_id: int | None
    attribute: str
    score: int
    instance_count: int | None
    spans: list[SpanOut]
    role: str
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.span_out import SpanOut # noqa: PLC0415
        id: int | None
        id = self.id

        study = self.study

        round_ = self.round_

        reviewer = self.reviewer

        is_gold = self.is_gold

        dataset = self.dataset

        conversation_id: None | str
        conversation_id = self.conversation_id

        turn_index: int | None
        turn_index = self.turn_index

        session_index: int | None
        session_index = self.session_index

        model: None | str
        model = self.model

        response: None | str
        response = self.response

        response_id: int | None
        response_id = self.response_id

        attribute = self.attribute

        score = self.score

        instance_count: int | None
        instance_count = self.instance_count

        spans = []
        for spans_item_data in self.spans:
            spans_item = spans_item_data.to_dict()
            spans.append(spans_item)



        role = self.role

        updated_at = self.updated_at.isoformat()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "study": study,
            "round": round_,
            "reviewer": reviewer,
            "is_gold": is_gold,
            "dataset": dataset,
            "conversation_id": conversation_id,
            "turn_index": turn_index,
            "session_index": session_index,
            "model": model,
            "response": response,
            "response_id": response_id,
            "attribute": attribute,
            "score": score,
            "instance_count": instance_count,
            "spans": spans,
            "role": role,
            "updated_at": updated_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.span_out import SpanOut # noqa: PLC0415
        d = dict(src_dict)
        def _parse_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        id = _parse_id(d.pop("id"))


        study = d.pop("study")

        round_ = d.pop("round")

        reviewer = d.pop("reviewer")

        is_gold = d.pop("is_gold")

        dataset = d.pop("dataset")

        def _parse_conversation_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        conversation_id = _parse_conversation_id(d.pop("conversation_id"))


        def _parse_turn_index(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        turn_index = _parse_turn_index(d.pop("turn_index"))


        def _parse_session_index(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        session_index = _parse_session_index(d.pop("session_index"))


        def _parse_model(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        model = _parse_model(d.pop("model"))


        def _parse_response(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        response = _parse_response(d.pop("response"))


        def _parse_response_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        response_id = _parse_response_id(d.pop("response_id"))


        attribute = d.pop("attribute")

        score = d.pop("score")

        def _parse_instance_count(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        instance_count = _parse_instance_count(d.pop("instance_count"))


        spans = []
        _spans = d.pop("spans")
        for spans_item_data in (_spans):
            spans_item = SpanOut.from_dict(spans_item_data)



            spans.append(spans_item)


        role = d.pop("role")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))




        judgment_out = cls(
            id=id,
            study=study,
            round_=round_,
            reviewer=reviewer,
            is_gold=is_gold,
            dataset=dataset,
            conversation_id=conversation_id,
            turn_index=turn_index,
            session_index=session_index,
            model=model,
            response=response,
            response_id=response_id,
            attribute=attribute,
            score=score,
            instance_count=instance_count,
            spans=spans,
            role=role,
            updated_at=updated_at,
        )


        judgment_out.additional_properties = d
        return judgment_out

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
