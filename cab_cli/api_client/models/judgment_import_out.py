from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="JudgmentImportOut")



@_attrs_define
class JudgmentImportOut:
    """ 
        Attributes:
            study_created (bool):
            rounds_created (list[str]):
            accounts_created (list[str]):
            judgments_created (int):
            judgments_unchanged (int):
            spans_created (int):
            session_labels_created (int): session labels: methods' predictions / reference labels
            session_labels_updated (int):
            session_labels_unchanged (int):
     """

    study_created: bool
    rounds_created: list[str]
    accounts_created: list[str]
    judgments_created: int
    judgments_unchanged: int
    spans_created: int
    session_labels_created: int
    session_labels_updated: int
    session_labels_unchanged: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        study_created = self.study_created

        rounds_created = self.rounds_created



        accounts_created = self.accounts_created



        judgments_created = self.judgments_created

        judgments_unchanged = self.judgments_unchanged

        spans_created = self.spans_created

        session_labels_created = self.session_labels_created

        session_labels_updated = self.session_labels_updated

        session_labels_unchanged = self.session_labels_unchanged


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "study_created": study_created,
            "rounds_created": rounds_created,
            "accounts_created": accounts_created,
            "judgments_created": judgments_created,
            "judgments_unchanged": judgments_unchanged,
            "spans_created": spans_created,
            "session_labels_created": session_labels_created,
            "session_labels_updated": session_labels_updated,
            "session_labels_unchanged": session_labels_unchanged,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        study_created = d.pop("study_created")

        rounds_created = cast(list[str], d.pop("rounds_created"))


        accounts_created = cast(list[str], d.pop("accounts_created"))


        judgments_created = d.pop("judgments_created")

        judgments_unchanged = d.pop("judgments_unchanged")

        spans_created = d.pop("spans_created")

        session_labels_created = d.pop("session_labels_created")

        session_labels_updated = d.pop("session_labels_updated")

        session_labels_unchanged = d.pop("session_labels_unchanged")

        judgment_import_out = cls(
            study_created=study_created,
            rounds_created=rounds_created,
            accounts_created=accounts_created,
            judgments_created=judgments_created,
            judgments_unchanged=judgments_unchanged,
            spans_created=spans_created,
            session_labels_created=session_labels_created,
            session_labels_updated=session_labels_updated,
            session_labels_unchanged=session_labels_unchanged,
        )


        judgment_import_out.additional_properties = d
        return judgment_import_out

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
