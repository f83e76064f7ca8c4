"""The clusters ARI is the mean of (docs/metrics.md#risk-clusters-and-ari): those of the response-level
attributes with a risk encoding, in schema order. Pure Python, no numpy, so that the schema's validation
(``annotation.schema_document``, which web workers load at start) checks a schema's ``indices.ari.clusters``
against the rule the report computes by.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol


class ClusteredAttribute(Protocol):
    """What the rule reads of an attribute: a schema document's, a stored one or the report's spec."""

    @property
    def unit(self) -> str: ...

    @property
    def cluster(self) -> str | None: ...

    @property
    def risk(self) -> Any: ...


def ari_clusters(attributes: Iterable[ClusteredAttribute]) -> list[str]:
    """The clusters ARI averages, in the order of their first attribute: a cluster counts through a response-level
    attribute with a risk encoding."""
    clusters: list[str] = []
    for attribute in attributes:
        if attribute.unit == "response" and attribute.risk is not None and attribute.cluster \
                and attribute.cluster not in clusters:
            clusters.append(attribute.cluster)
    return clusters
