from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="MetricRunInRequest")



@_attrs_define
class MetricRunInRequest:
    """ 
        Attributes:
            seed (int | Unset):  Default: 0.
            bootstrap (int | Unset): bootstrap resamples; left out: the study's default (1000, or its kind's:
                docs/metrics.md#parameters-of-a-run)
            top_k (int | Unset): panel size k: the ranking's cut and the largest top-k of the selection-stability shares
                Default: 6.
     """

    seed: int | Unset = 0
    bootstrap: int | Unset = UNSET
    top_k: int | Unset = 6
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        seed = self.seed

        bootstrap = self.bootstrap

        top_k = self.top_k


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
        })
        if seed is not UNSET:
            field_dict["seed"] = seed
        if bootstrap is not UNSET:
            field_dict["bootstrap"] = bootstrap
        if top_k is not UNSET:
            field_dict["top_k"] = top_k

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        seed = d.pop("seed", UNSET)

        bootstrap = d.pop("bootstrap", UNSET)

        top_k = d.pop("top_k", UNSET)

        metric_run_in_request = cls(
            seed=seed,
            bootstrap=bootstrap,
            top_k=top_k,
        )


        metric_run_in_request.additional_properties = d
        return metric_run_in_request

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
