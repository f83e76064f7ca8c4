"""The computation core's built-in copy of cab-v1 (for synthetic studies and core tests) must equal the schema
file the product installs: the core may not read the file itself (it knows no app), so this test keeps the two
from drifting apart."""

from __future__ import annotations

from annotation import schema_document
from metrics.core.synthetic import DEFAULT_SCHEMA, DEFAULT_SUBCATEGORIES


def _installed() -> schema_document.SchemaDoc:
    return schema_document.load_builtin("cab-v1")


def test_default_schema_has_the_installed_attributes_in_order():
    assert [spec.code for spec in DEFAULT_SCHEMA] == [a.code for a in _installed().attributes]


def test_default_schema_matches_the_installed_scales_buckets_and_risk():
    installed = {a.code: a for a in _installed().attributes}
    for spec in DEFAULT_SCHEMA:
        a = installed[spec.code]
        assert spec.group == a.group, spec.code
        assert spec.unit == a.unit, spec.code
        assert (spec.cluster or "") == a.cluster, spec.code
        assert spec.scale == tuple(range(a.scale_min, a.scale_max + 1)), spec.code
        assert spec.level == a.level, spec.code
        assert spec.bucket == {int(k): v for k, v in a.bucket.items()}, spec.code
        assert spec.risk == ({int(k): v for k, v in a.risk.items()} if a.risk is not None else None), spec.code
        assert spec.uiri == a.counts_toward_uiri, spec.code


def test_default_subcategories_match_the_installed_ones():
    installed = {sub.slug: a.code for a in _installed().attributes for sub in a.subcategories}
    assert installed == DEFAULT_SUBCATEGORIES
