"""Shapes of the metric-run API."""

from __future__ import annotations

from rest_framework import serializers

from metrics import parameters
from metrics.kind_sections import report_sections
from metrics.models import MetricRun


class MetricRunIn(serializers.Serializer):
    seed = serializers.IntegerField(min_value=parameters.SEED_MIN, max_value=parameters.SEED_MAX,
                                    default=parameters.DEFAULT_SEED, error_messages=parameters.error_messages("seed"))
    bootstrap = serializers.IntegerField(min_value=parameters.BOOTSTRAP_MIN, max_value=parameters.BOOTSTRAP_MAX,
                                         required=False, error_messages=parameters.error_messages("bootstrap"),
                                         help_text=f"bootstrap resamples; left out: the study's default "
                                                   f"({parameters.DEFAULT_BOOTSTRAP}, or its kind's: "
                                                   f"docs/metrics.md#parameters-of-a-run)")
    top_k = serializers.IntegerField(min_value=parameters.TOP_K_MIN, max_value=parameters.TOP_K_MAX,
                                     default=parameters.DEFAULT_TOP_K,
                                     error_messages=parameters.error_messages("top_k"),
                                     help_text="panel size k: the ranking's cut and the largest top-k of the "
                                               "selection-stability shares")


class MetricRunFilterIn(serializers.Serializer):
    status = serializers.ChoiceField(choices=MetricRun.Status.values, required=False,
                                     help_text="only the runs in this state (succeeded: the runs with a report)")


class MetricRunOut(serializers.Serializer):
    id = serializers.IntegerField()
    study = serializers.CharField(source="study.slug")
    status = serializers.ChoiceField(choices=MetricRun.Status.choices)
    progress = serializers.FloatField(help_text="fraction done, 0 to 1")
    progress_message = serializers.CharField()
    trigger = serializers.CharField()
    parameters = serializers.DictField()
    requested_by = serializers.CharField(source="requested_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    resent_at = serializers.DateTimeField(
        allow_null=True, help_text="when the workers' recovery last sent the run again (no worker had taken it in "
                                   "time, or its worker stopped); null if never")
    error = serializers.SerializerMethodField(help_text="what went wrong (first line), for a failed run")

    def get_error(self, run: MetricRun) -> str:
        return run.error.splitlines()[0] if run.error else ""


# --- the metrics report (docs/metrics.md#report-keys), for the OpenAPI schema: its top-level keys typed, the sections
# as objects whose keys are documented there (they follow the study's rounds, reviewers, models and attributes).


class ReportAttributeOut(serializers.Serializer):
    code = serializers.CharField()
    group = serializers.CharField(help_text="user, response or flag")
    cluster = serializers.CharField(allow_null=True, help_text="D, E, R or F for a risk attribute; null otherwise")
    scale = serializers.ListField(child=serializers.IntegerField())
    level = serializers.CharField(help_text="nominal, ordinal, interval or ratio")
    unit = serializers.CharField(help_text="turn, response or conversation")
    uiri = serializers.BooleanField(help_text="counted in UIRI")
    risk = serializers.BooleanField(help_text="has a risk encoding")


class ReportInputOut(serializers.Serializer):
    judgments = serializers.IntegerField(help_text="judgments read: used + every dropped count")
    used = serializers.IntegerField()
    dropped = serializers.DictField(child=serializers.IntegerField(), help_text="reason -> judgments left out")
    rounds = serializers.ListField(child=serializers.CharField())
    fingerprint = serializers.CharField(required=False, help_text="sha256:… of the judgment and span rows read "
                                        "(docs/metrics.md#provenance); missing from reports computed before it")


class ReportSoftwareOut(serializers.Serializer):
    version = serializers.CharField(help_text="the package version that computed the report")
    commit = serializers.CharField(help_text="its commit (40 hex digits), or empty where unknown")


class ReportRunOut(serializers.Serializer):
    id = serializers.IntegerField()
    trigger = serializers.CharField()
    parameters = serializers.DictField()
    requested_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class ReportStudyOut(serializers.Serializer):
    slug = serializers.CharField()
    schema = serializers.CharField()
    schema_version = serializers.IntegerField()


class ReportWarningOut(serializers.Serializer):
    section = serializers.CharField(help_text="main, or the study kind's section (its key in the report)")
    message = serializers.CharField()


class MetricReportOut(serializers.Serializer):
    """The metrics report of a run (docs/metrics.md#report-keys). The keys below always exist (a section with
    nothing to compute is empty, never missing; ``study`` and ``warnings`` are missing only from reports computed
    before they were added); more may be added."""

    version = serializers.IntegerField(help_text="the report format's version")
    parameters = serializers.DictField(help_text="the run's parameters (seed, bootstrap, top_k, …), so a figure can "
                                                 "be derived again")
    attributes = ReportAttributeOut(many=True, help_text="the schema's attributes, in schema order")
    input = ReportInputOut(help_text="what was read and what was left out, and why")
    calibration = serializers.DictField(help_text="reliability of the calibration rounds: reviewers, pairwise, "
                                                  "gold_in_plurality, bootstrap, kappa_by_attribute, alpha, …")
    indices = serializers.DictField(help_text="main-round indices: uiri, flags, ari, attribute_risk, fingerprint, "
                                              "coupling, trajectories, spans, …")
    study = ReportStudyOut(required=False)
    warnings = ReportWarningOut(many=True, required=False,
                                help_text="each section that is empty although the study has judgments or labels "
                                          "for it")
    software = ReportSoftwareOut(required=False, help_text="what computed the report (docs/metrics.md#provenance); "
                                                           "missing from reports computed before it")

    def get_fields(self) -> dict[str, serializers.Field]:
        """The fields above, with the section of each study kind (``metrics.kind_sections``: a report holds the
        one of its study's kind) before ``software``."""
        fields = super().get_fields()
        sections = {section.slug: serializers.DictField(required=False, help_text=section.help_text)
                    for section in report_sections()}
        before, after = list(fields.items()), list[tuple[str, serializers.Field]]()
        while before and before[-1][0] in ("software", "run"):
            after.insert(0, before.pop())
        return dict([*before, *sections.items(), *after])


class ReportFileOut(MetricReportOut):
    """The report.json download: the report, led by the run it came from (docs/metrics.md#provenance)."""

    run = ReportRunOut(help_text="the run: id, trigger, parameters and times (ISO 8601, UTC)")
