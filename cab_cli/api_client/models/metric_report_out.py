from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.metric_report_out_calibration import MetricReportOutCalibration
  from ..models.metric_report_out_care import MetricReportOutCare
  from ..models.metric_report_out_indices import MetricReportOutIndices
  from ..models.metric_report_out_lc_8 import MetricReportOutLc8
  from ..models.metric_report_out_parameters import MetricReportOutParameters
  from ..models.report_attribute_out import ReportAttributeOut
  from ..models.report_input_out import ReportInputOut
  from ..models.report_software_out import ReportSoftwareOut
  from ..models.report_study_out import ReportStudyOut
  from ..models.report_warning_out import ReportWarningOut





T = TypeVar("T", bound="MetricReportOut")



@_attrs_define
class MetricReportOut:
    """ The metrics report of a run (docs/metrics.md#report-keys). The keys below always exist (a section with
    nothing to compute is empty, never missing; ``study`` and ``warnings`` are missing only from reports computed
    before they were added); more may be added.

        Attributes:
            version (int): the report format's version
            parameters (MetricReportOutParameters): the run's parameters (seed, bootstrap, top_k, …), so a figure can be
                derived again
            attributes (list[ReportAttributeOut]): the schema's attributes, in schema order
            input_ (ReportInputOut):
            calibration (MetricReportOutCalibration): reliability of the calibration rounds: reviewers, pairwise,
                gold_in_plurality, bootstrap, kappa_by_attribute, alpha, …
            indices (MetricReportOutIndices): main-round indices: uiri, flags, ari, attribute_risk, fingerprint, coupling,
                trajectories, spans, …
            study (ReportStudyOut | Unset):
            warnings (list[ReportWarningOut] | Unset): each section that is empty although the study has judgments or labels
                for it
            care (MetricReportOutCare | Unset): a CARE study's section (docs/care.md)
            lc8 (MetricReportOutLc8 | Unset): a LongCounsel-8 study's section (docs/lc8-metrics.md)
            software (ReportSoftwareOut | Unset):
     """

    version: int
    parameters: MetricReportOutParameters
    attributes: list[ReportAttributeOut]
    input_: ReportInputOut
    calibration: MetricReportOutCalibration
    indices: MetricReportOutIndices
    study: ReportStudyOut | Unset = UNSET
    warnings: list[ReportWarningOut] | Unset = UNSET
    care: MetricReportOutCare | Unset = UNSET
    lc8: MetricReportOutLc8 | Unset = UNSET
    software: ReportSoftwareOut | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.metric_report_out_calibration import MetricReportOutCalibration # noqa: PLC0415
        from ..models.metric_report_out_care import MetricReportOutCare # noqa: PLC0415
        from ..models.metric_report_out_indices import MetricReportOutIndices # noqa: PLC0415
        from ..models.metric_report_out_lc_8 import MetricReportOutLc8 # noqa: PLC0415
        from ..models.metric_report_out_parameters import MetricReportOutParameters # noqa: PLC0415
        from ..models.report_attribute_out import ReportAttributeOut # noqa: PLC0415
        from ..models.report_input_out import ReportInputOut # noqa: PLC0415
        from ..models.report_software_out import ReportSoftwareOut # noqa: PLC0415
        from ..models.report_study_out import ReportStudyOut # noqa: PLC0415
        from ..models.report_warning_out import ReportWarningOut # noqa: PLC0415
        version = self.version

        parameters = self.parameters.to_dict()

        attributes = []
        for attributes_item_data in self.attributes:
            attributes_item = attributes_item_data.to_dict()
            attributes.append(attributes_item)



        input_ = self.input_.to_dict()

        calibration = self.calibration.to_dict()

        indices = self.indices.to_dict()

        study: dict[str, Any] | Unset = UNSET
        if not isinstance(self.study, Unset):
            study = self.study.to_dict()

        warnings: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.warnings, Unset):
            warnings = []
            for warnings_item_data in self.warnings:
                warnings_item = warnings_item_data.to_dict()
                warnings.append(warnings_item)



        care: dict[str, Any] | Unset = UNSET
        if not isinstance(self.care, Unset):
            care = self.care.to_dict()

        lc8: dict[str, Any] | Unset = UNSET
        if not isinstance(self.lc8, Unset):
            lc8 = self.lc8.to_dict()

        software: dict[str, Any] | Unset = UNSET
        if not isinstance(self.software, Unset):
            software = self.software.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "version": version,
            "parameters": parameters,
            "attributes": attributes,
            "input": input_,
            "calibration": calibration,
            "indices": indices,
        })
        if study is not UNSET:
            field_dict["study"] = study
        if warnings is not UNSET:
            field_dict["warnings"] = warnings
        if care is not UNSET:
            field_dict["care"] = care
        if lc8 is not UNSET:
            field_dict["lc8"] = lc8
        if software is not UNSET:
            field_dict["software"] = software

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.metric_report_out_calibration import MetricReportOutCalibration # noqa: PLC0415
        from ..models.metric_report_out_care import MetricReportOutCare # noqa: PLC0415
        from ..models.metric_report_out_indices import MetricReportOutIndices # noqa: PLC0415
        from ..models.metric_report_out_lc_8 import MetricReportOutLc8 # noqa: PLC0415
        from ..models.metric_report_out_parameters import MetricReportOutParameters # noqa: PLC0415
        from ..models.report_attribute_out import ReportAttributeOut # noqa: PLC0415
        from ..models.report_input_out import ReportInputOut # noqa: PLC0415
        from ..models.report_software_out import ReportSoftwareOut # noqa: PLC0415
        from ..models.report_study_out import ReportStudyOut # noqa: PLC0415
        from ..models.report_warning_out import ReportWarningOut # noqa: PLC0415
        d = dict(src_dict)
        version = d.pop("version")

        parameters = MetricReportOutParameters.from_dict(d.pop("parameters"))




        attributes = []
        _attributes = d.pop("attributes")
        for attributes_item_data in (_attributes):
            attributes_item = ReportAttributeOut.from_dict(attributes_item_data)



            attributes.append(attributes_item)


        input_ = ReportInputOut.from_dict(d.pop("input"))




        calibration = MetricReportOutCalibration.from_dict(d.pop("calibration"))




        indices = MetricReportOutIndices.from_dict(d.pop("indices"))




        _study = d.pop("study", UNSET)
        study: ReportStudyOut | Unset
        if isinstance(_study,  Unset):
            study = UNSET
        else:
            study = ReportStudyOut.from_dict(_study)




        _warnings = d.pop("warnings", UNSET)
        warnings: list[ReportWarningOut] | Unset = UNSET
        if _warnings is not UNSET:
            warnings = []
            for warnings_item_data in _warnings:
                warnings_item = ReportWarningOut.from_dict(warnings_item_data)



                warnings.append(warnings_item)


        _care = d.pop("care", UNSET)
        care: MetricReportOutCare | Unset
        if isinstance(_care,  Unset):
            care = UNSET
        else:
            care = MetricReportOutCare.from_dict(_care)




        _lc8 = d.pop("lc8", UNSET)
        lc8: MetricReportOutLc8 | Unset
        if isinstance(_lc8,  Unset):
            lc8 = UNSET
        else:
            lc8 = MetricReportOutLc8.from_dict(_lc8)




        _software = d.pop("software", UNSET)
        software: ReportSoftwareOut | Unset
        if isinstance(_software,  Unset):
            software = UNSET
        else:
            software = ReportSoftwareOut.from_dict(_software)




        metric_report_out = cls(
            version=version,
            parameters=parameters,
            attributes=attributes,
            input_=input_,
            calibration=calibration,
            indices=indices,
            study=study,
            warnings=warnings,
            care=care,
            lc8=lc8,
            software=software,
        )


        metric_report_out.additional_properties = d
        return metric_report_out

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
