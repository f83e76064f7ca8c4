"""Shapes of the metric-run API."""

from __future__ import annotations

from rest_framework import serializers

from metrics import parameters
from metrics.models import MetricRun


class MetricRunIn(serializers.Serializer):
    seed = serializers.IntegerField(min_value=parameters.SEED_MIN, max_value=parameters.SEED_MAX,
                                    default=parameters.DEFAULT_SEED)
    bootstrap = serializers.IntegerField(min_value=parameters.BOOTSTRAP_MIN, max_value=parameters.BOOTSTRAP_MAX,
                                         default=parameters.DEFAULT_BOOTSTRAP, help_text="bootstrap resamples")
    top_k = serializers.IntegerField(min_value=parameters.TOP_K_MIN, max_value=parameters.TOP_K_MAX,
                                     default=parameters.DEFAULT_TOP_K,
                                     help_text="panel size k: the ranking's cut and the largest top-k of the "
                                               "selection-stability shares")


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
