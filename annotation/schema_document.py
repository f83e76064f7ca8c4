"""Parse and validate a schema document (the versioned JSON that defines what is coded, on which unit, on
what scale). Pure Python: used by the data migration that installs ``cab-v1`` and by ``schema_install``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotation.kinds import kinds
from metrics.core.clusters import ClusteredAttribute, ari_clusters

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
UNITS = ("turn", "response", "conversation", "session")
LEVELS = ("nominal", "ordinal", "interval")
# Session checklist items (docs/sessions.md#session-checklists): their types, and the crisis types they apply to.
ITEM_TYPES = ("productive", "unproductive", "required")
CRISIS_TYPES = ("SI", "self-harm", "anxiety")
_COLOUR = re.compile(r"^#[0-9a-fA-F]{6}$")
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
UIRI_BANDS = ("low", "medium", "high")
# The thresholds of the indices block besides UIRI's bands (index_thresholds): per block, the anchor of
# docs/metrics.md that defines them and, per key, its ReportParams field and whether 0 is refused (no q is below 0).
_THRESHOLDS: dict[str, tuple[str, dict[str, tuple[str, bool]]]] = {
    "trajectories": ("multi-turn-trajectories", {"flat_slope": ("slope_flat_threshold", False)}),
    "coupling": ("input-response-coupling", {"min_abs_rho": ("coupling_min_abs_rho", False),
                                             "max_q": ("coupling_max_q", True)}),
}


class SchemaDocumentError(ValueError):
    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("invalid schema document: " + "; ".join(errors))


@dataclass(frozen=True)
class SubcategorySpec:
    slug: str
    name: str
    colour: str
    style: str
    description: str
    position: int


@dataclass(frozen=True)
class AttributeSpecDoc:
    code: str
    name: str
    group: str
    unit: str
    cluster: str
    position: int
    scale_min: int
    scale_max: int
    level: str
    scale_labels: dict[str, str]
    definition: str
    anchors: dict[str, str]
    bucket: dict[str, int]
    risk: dict[str, float] | None
    has_instance_count: bool
    counts_toward_uiri: bool
    subcategories: list[SubcategorySpec] = field(default_factory=list)
    item_type: str = ""  # session checklist items only
    crisis_types: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SchemaDoc:
    slug: str
    version: int
    name: str
    description: str
    definition: dict[str, Any]
    attributes: list[AttributeSpecDoc]


def builtin_path(slug: str) -> Path:
    """The file of a schema the product ships: ``annotation/schemas/<slug>.json`` (the default kind's), else the
    ``schemas/`` folder of the study kind's app that ships it (``settings.STUDY_KINDS``)."""
    from django.apps import apps
    from django.conf import settings

    folders = [SCHEMA_DIR, *(Path(app.path) / "schemas" for app in apps.get_app_configs()
                             if app.name in settings.STUDY_KINDS)]
    for folder in folders:
        path = folder / f"{slug}.json"
        if path.is_file():
            return path
    raise FileNotFoundError(f"no built-in schema {slug!r} in {', '.join(str(f) for f in folders)}")


def load_builtin(slug: str) -> SchemaDoc:
    return parse(json.loads(builtin_path(slug).read_text(encoding="utf-8")))


def parse(doc: Any) -> SchemaDoc:  # noqa: C901 - one linear validation pass reads best in one place
    """Validate the whole document and collect every error with its path before failing."""
    errors: list[str] = []
    if not isinstance(doc, dict):
        raise SchemaDocumentError(["document: must be a JSON object"])

    def need(obj: dict, key: str, kind: type | tuple[type, ...], where: str) -> Any:
        value = obj.get(key)
        if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
            errors.append(f"{where}.{key}: required, must be {getattr(kind, '__name__', kind)}")
            return None
        return value

    slug = need(doc, "slug", str, "schema")
    if slug is not None and not _SLUG.match(slug):
        errors.append("schema.slug: use lower-case letters, digits and dashes")
    version = need(doc, "version", int, "schema")
    name = need(doc, "name", str, "schema")
    groups = need(doc, "groups", list, "schema") or []
    group_units: dict[str, str] = {}
    for i, group in enumerate(groups):
        where = f"groups[{i}]"
        if not isinstance(group, dict):
            errors.append(f"{where}: must be an object")
            continue
        code = need(group, "code", str, where)
        unit = need(group, "unit", str, where)
        if unit is not None and unit not in UNITS:
            errors.append(f"{where}.unit: {unit!r} is not one of {', '.join(UNITS)}")
        if code is not None:
            group_units[code] = unit
    given_clusters = doc.get("clusters", [])
    if not isinstance(given_clusters, list):
        errors.append("schema.clusters: must be a list of objects")
        given_clusters = []
    clusters = {c.get("code") for c in given_clusters if isinstance(c, dict) and isinstance(c.get("code"), str)}
    indices = doc.get("indices")
    try:
        index_thresholds(indices)
    except SchemaDocumentError as error:
        errors += error.errors
    uiri = indices.get("uiri") if isinstance(indices, dict) else None
    listed = uiri.get("attributes", []) if isinstance(uiri, dict) else []
    if not isinstance(listed, list) or not all(isinstance(code, str) for code in listed):
        errors.append("indices.uiri.attributes: must be a list of attribute codes")
        listed = []
    uiri_codes = set(listed)

    attributes: list[AttributeSpecDoc] = []
    seen_codes: set[str] = set()
    seen_slugs: set[str] = set()
    for position, attr in enumerate(need(doc, "attributes", list, "schema") or []):
        where = f"attributes[{position}]"
        if not isinstance(attr, dict):
            errors.append(f"{where}: must be an object")
            continue
        code = need(attr, "code", str, where)
        if code is not None:
            where = f"attributes[{code}]"
            if code in seen_codes:
                errors.append(f"{where}.code: duplicate attribute code")
            seen_codes.add(code)
        group = need(attr, "group", str, where)
        if group is not None and group not in group_units:
            errors.append(f"{where}.group: {group!r} is not a group of this schema")
        cluster = attr.get("cluster") or ""
        if not isinstance(cluster, str):
            errors.append(f"{where}.cluster: must be a cluster code")
            cluster = ""
        if cluster and cluster not in clusters:
            errors.append(f"{where}.cluster: {cluster!r} is not a cluster of this schema")
        scale = need(attr, "scale", dict, where) or {}
        lo, hi, value_labels = _scale_range(scale, f"{where}.scale", errors)
        level = scale.get("level")
        if level not in LEVELS:
            errors.append(f"{where}.scale.level: must be one of {', '.join(LEVELS)}")
        values = [str(v) for v in range(lo, hi + 1)]
        # A nominal scale's categories have no order to relax: its bucket may be left out (each value its own).
        bucket = attr.get("bucket", {v: int(v) for v in values} if value_labels or level == "nominal" else None)
        if not isinstance(bucket, dict) or sorted(bucket) != sorted(values):
            errors.append(f"{where}.bucket: must map every scale value {values} to a bucket value")
            bucket = {}
        elif any(not isinstance(v, int) or not lo <= v <= hi for v in bucket.values()):
            errors.append(f"{where}.bucket: bucket values must be scale values")
            bucket = {}
        risk = attr.get("risk")
        if risk is not None:
            if not isinstance(risk, dict) or sorted(risk) != sorted(values):
                errors.append(f"{where}.risk: must map every scale value {values} to a risk in [0, 1]")
                risk = None
            elif any(isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1 for v in risk.values()):
                errors.append(f"{where}.risk: risks must be numbers in [0, 1]")
        anchors = attr.get("anchors") or {}
        if isinstance(anchors, dict) and value_labels:  # a scale given by its values may key anchors by value
            anchors = {str(value_labels.index(k)) if k in value_labels else k: v for k, v in anchors.items()}
        if not isinstance(anchors, dict) or any(k not in values for k in anchors):
            errors.append(f"{where}.anchors: keys must be scale values {values}")
            anchors = {}
        subcategories: list[SubcategorySpec] = []
        given_subcategories = attr.get("subcategories") or []
        if not isinstance(given_subcategories, list):
            errors.append(f"{where}.subcategories: must be a list of objects")
            given_subcategories = []
        for j, sub in enumerate(given_subcategories):
            sub_where = f"{where}.subcategories[{j}]"
            if not isinstance(sub, dict):
                errors.append(f"{sub_where}: must be an object")
                continue
            sub_slug = need(sub, "slug", str, sub_where)
            if sub_slug is not None:
                if not _SLUG.match(sub_slug):
                    errors.append(f"{sub_where}.slug: use lower-case letters, digits and dashes")
                if sub_slug in seen_slugs:
                    errors.append(f"{sub_where}.slug: {sub_slug!r} is used twice; slugs are unique in a schema")
                seen_slugs.add(sub_slug)
            colour = sub.get("colour", "")
            if not _COLOUR.match(str(colour)):
                errors.append(f"{sub_where}.colour: must be #rrggbb")
            subcategories.append(
                SubcategorySpec(
                    slug=sub_slug or "",
                    name=str(sub.get("name") or sub_slug or ""),
                    colour=str(colour),
                    style=str(sub.get("style") or "solid"),
                    description=str(sub.get("description") or ""),
                    position=j,
                )
            )
        unit = group_units.get(group or "", "turn")
        if subcategories and unit != "response":
            errors.append(f"{where}.subcategories: spans exist only on response-level attributes")
        item_type, crisis_types = _checklist(attr.get("checklist"), unit=unit, lo=lo, hi=hi, where=where,
                                             errors=errors)
        labels = scale.get("labels") or {}
        if value_labels:
            labels = {str(i): label for i, label in enumerate(value_labels)}
        attributes.append(
            AttributeSpecDoc(
                code=code or "",
                name=str(attr.get("name") or code or ""),
                group=group or "",
                unit=unit or "turn",
                cluster=cluster,
                position=position,
                scale_min=lo,
                scale_max=hi,
                level=level or "ordinal",
                scale_labels={str(k): str(v) for k, v in labels.items()},
                definition=str(attr.get("definition") or ""),
                anchors={str(k): str(v) for k, v in anchors.items()},
                bucket={str(k): int(v) for k, v in bucket.items()},
                risk={str(k): float(v) for k, v in risk.items()} if isinstance(risk, dict) else None,
                has_instance_count=bool(attr.get("instance_count", False)),
                counts_toward_uiri=code in uiri_codes,
                subcategories=subcategories,
                item_type=item_type,
                crisis_types=crisis_types,
            )
        )
    unknown_uiri = uiri_codes - seen_codes
    if unknown_uiri:
        errors.append(f"indices.uiri.attributes: unknown attribute codes {sorted(unknown_uiri)}")
    if isinstance(indices, dict):
        errors += ari_cluster_problems(indices, attributes)
    blocks = [slug for slug, kind in kinds().items() if not kind.is_default and doc.get(slug) is not None]
    if len(blocks) > 1:  # annotation.kinds: a study is of one kind, which its schema's one block says
        errors.append(f"{', '.join(blocks)}: a schema is of one study kind; give one of these blocks, not "
                      f"{len(blocks)}")
    for kind in kinds().values():  # each kind's block, by the kind's own check (its block_problems hook)
        block = None if kind.is_default else doc.get(kind.slug)
        if block is None:
            continue
        if not isinstance(block, dict):
            errors.append(f"{kind.slug}: must be an object")
        elif kind.block_problems is not None:
            errors += kind.block_problems(block, {a.code: a for a in attributes}, group_units)
    if not attributes:
        errors.append("schema.attributes: at least one attribute is required")
    if errors:
        raise SchemaDocumentError(errors)
    definition = {k: v for k, v in doc.items() if k != "attributes"}
    return SchemaDoc(
        slug=slug,
        version=version,
        name=name,
        description=str(doc.get("description") or ""),
        definition=definition,
        attributes=attributes,
    )


def index_thresholds(indices: Any) -> dict[str, Any]:
    """The report's thresholds a schema's ``indices`` block sets, by their ``ReportParams`` field; one it does not
    give is left out, and the run keeps the protocol's default (docs/schema.md):

    - ``uiri.bands``: UIRI's Low / Medium / High bounds (``uiri_bands``, docs/metrics.md#uiri);
    - ``trajectories.flat_slope``: a trajectory whose |slope| per turn is at most this is flat
      (``slope_flat_threshold``, default 0.005, docs/metrics.md#multi-turn-trajectories);
    - ``coupling.min_abs_rho`` and ``coupling.max_q``: a coupling cell is significant when |rho| >= min_abs_rho and
      q < max_q (``coupling_min_abs_rho``, ``coupling_max_q``, defaults 0.20 and 0.05,
      docs/metrics.md#input-response-coupling).

    SchemaDocumentError naming every value the report could not use: the metric runs read them from here."""
    if indices is None:
        return {}
    if not isinstance(indices, dict):
        raise SchemaDocumentError(["indices: must be an object (docs/schema.md)"])
    errors: list[str] = []
    found: dict[str, Any] = {}
    uiri = indices.get("uiri")
    if uiri is not None and not isinstance(uiri, dict):
        errors.append("indices.uiri: must be an object (docs/metrics.md#uiri)")
    elif uiri is not None and uiri.get("bands") is not None:
        try:
            found["uiri_bands"] = uiri_band_bounds(uiri["bands"])
        except ValueError as error:
            errors.append(str(error))
    for block in _THRESHOLDS:
        if indices.get(block) is not None:
            _block_thresholds(block, indices[block], found, errors)
    if errors:
        raise SchemaDocumentError(errors)
    return found


def ari_cluster_problems(indices: dict[str, Any], attributes: Iterable[ClusteredAttribute]) -> list[str]:
    """What is wrong with a schema's ``indices.ari.clusters`` (optional): the report never reads it, ARI being the
    mean of the clusters of the response-level attributes with a risk encoding (``metrics.core.clusters``), so when
    given it must list exactly those, and the document cannot say other clusters than the report averages. Empty:
    not given, or right."""
    ari = indices.get("ari")
    if ari is None:
        return []
    where = "indices.ari"
    if not isinstance(ari, dict):
        return [f"{where}: must be an object (docs/schema.md)"]
    given = ari.get("clusters")
    if given is None:
        return []
    if not isinstance(given, list) or not all(isinstance(code, str) for code in given):
        return [f"{where}.clusters: must be a list of cluster codes (docs/schema.md)"]
    read = ari_clusters(attributes)
    extra = [code for code in dict.fromkeys(given) if code not in read]
    missing = [code for code in read if code not in given]
    if not extra and not missing:
        return []
    differences = ([f"lists {', '.join(extra)}, which no response-level attribute with a risk encoding has"]
                   if extra else []) + ([f"leaves out {', '.join(missing)}"] if missing else [])
    return [f"{where}.clusters: {' and '.join(differences)}; ARI is the mean of the clusters of the response-level "
            f"attributes with a risk encoding ({', '.join(read) or 'none'}), and the list must name exactly those "
            "(docs/metrics.md#risk-clusters-and-ari)"]


def _block_thresholds(block: str, given: Any, found: dict[str, Any], errors: list[str]) -> None:
    """The thresholds of ``indices.BLOCK`` into ``found`` by ReportParams field, or what is wrong into ``errors``."""
    anchor, keys = _THRESHOLDS[block]
    where = f"indices.{block}"
    if not isinstance(given, dict):
        errors.append(f"{where}: must be an object (docs/metrics.md#{anchor})")
        return
    unknown = sorted(set(given) - set(keys))
    if unknown:
        errors.append(f"{where}: unknown keys {', '.join(unknown)}; it may give {', '.join(keys)} "
                      f"(docs/metrics.md#{anchor})")
    for key, (name, above_zero) in keys.items():
        value = given.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1 or (
                above_zero and value == 0):
            bounds = "above 0 and at most 1" if above_zero else "from 0 to 1"
            errors.append(f"{where}.{key}: must be a number {bounds} (docs/metrics.md#{anchor})")
        else:
            found[name] = float(value)


def uiri_band_bounds(bands: Any) -> tuple[float, float]:
    """The lower bounds of Medium and High in a schema's ``indices.uiri.bands``: ``[{"code": "low", "below": 0.3},
    {"code": "medium", "below": 0.6}, {"code": "high", "below": null}]`` is Low < 0.30, Medium [0.30, 0.60) and
    High >= 0.60 (docs/metrics.md#uiri). ValueError saying what is wrong: the report's bands are these three."""
    def refused(problem: str) -> ValueError:
        return ValueError(f"indices.uiri.bands: {problem} (docs/metrics.md#uiri)")

    codes = [band.get("code") if isinstance(band, dict) else None for band in bands] if isinstance(bands, list) else []
    if codes != list(UIRI_BANDS):
        raise refused("give low, medium and high in this order")
    low, medium, high = (band.get("below") for band in bands)
    for code, bound in (("low", low), ("medium", medium)):
        if isinstance(bound, bool) or not isinstance(bound, int | float):
            raise refused(f"{code}'s below must be a number")
    if high is not None:
        raise refused("high's below must be null")
    if not 0 <= low <= medium <= 1:
        raise refused("the bounds must rise from 0 to 1")
    return float(low), float(medium)


def _scale_range(scale: dict, where: str, errors: list[str]) -> tuple[int, int, list[str]]:
    """(min, max, value labels) of a scale given by ``min``/``max`` or by its ``values`` (a nominal scale's
    categories, coded 0, 1, … in the order given; the labels are what people and files may use for them)."""
    values = scale.get("values")
    if values is not None:
        if (not isinstance(values, list) or len(values) < 2
                or any(not isinstance(v, str) or not v.strip() for v in values)):
            errors.append(f"{where}.values: must be a list of at least two non-empty strings")
            return 0, 0, []
        if len(set(values)) != len(values):
            errors.append(f"{where}.values: each value may appear once")
            return 0, 0, []
        if "min" in scale or "max" in scale:
            errors.append(f"{where}: give either values or min and max, not both")
        return 0, len(values) - 1, list(values)
    lo, hi = scale.get("min"), scale.get("max")
    if not (isinstance(lo, int) and isinstance(hi, int) and hi > lo):
        errors.append(f"{where}: needs integer min < max (or a list of values)")
        return 0, 0, []
    return lo, hi, []


def _checklist(checklist: Any, *, unit: str, lo: int, hi: int, where: str,
               errors: list[str]) -> tuple[str, list[str]]:
    """A session checklist item's (type, crisis types) from its ``checklist`` entry; ("", []) when it has none."""
    if checklist is None:
        return "", []
    if not isinstance(checklist, dict):
        errors.append(f"{where}.checklist: must be an object with type and crisis_types")
        return "", []
    if unit != "session":
        errors.append(f"{where}.checklist: checklist items are coded once per session (a group with unit session)")
    if (lo, hi) != (0, 1):
        errors.append(f"{where}.checklist: a checklist item is scored 0/1 (absent/present)")
    item_type = checklist.get("type")
    if item_type not in ITEM_TYPES:
        errors.append(f"{where}.checklist.type: must be one of {', '.join(ITEM_TYPES)}")
        item_type = ""
    crisis_types = checklist.get("crisis_types", [])  # empty: the item applies to every crisis type
    if (not isinstance(crisis_types, list)
            or any(c not in CRISIS_TYPES for c in crisis_types) or len(set(crisis_types)) != len(crisis_types)):
        errors.append(f"{where}.checklist.crisis_types: a list of distinct crisis types from "
                      f"{', '.join(CRISIS_TYPES)} (empty: every crisis type)")
        crisis_types = []
    return str(item_type or ""), list(crisis_types or [])


def write_schema_rows(doc: SchemaDoc, *, schema_model, attribute_model, subcategory_model) -> Any:
    """Create or update the rows of a schema document. Takes the model classes so the data migration can
    pass its historical models; callers are responsible for the frozen check and the transaction."""
    schema, _ = schema_model.objects.update_or_create(
        slug=doc.slug,
        defaults={
            "version": doc.version,
            "name": doc.name,
            "description": doc.description,
            "definition": doc.definition,
        },
    )
    # The checklist fields came later (annotation 0012): a data migration before them has no such columns.
    has_checklist = any(f.name == "item_type" for f in attribute_model._meta.get_fields())
    for spec in doc.attributes:
        checklist = {"item_type": spec.item_type, "crisis_types": spec.crisis_types} if has_checklist else {}
        attribute, _ = attribute_model.objects.update_or_create(
            schema=schema,
            code=spec.code,
            defaults={
                "name": spec.name,
                "group": spec.group,
                "unit": spec.unit,
                "cluster": spec.cluster,
                "position": spec.position,
                "scale_min": spec.scale_min,
                "scale_max": spec.scale_max,
                "level": spec.level,
                "scale_labels": spec.scale_labels,
                "definition": spec.definition,
                "anchors": spec.anchors,
                "bucket": spec.bucket,
                "risk": spec.risk,
                "has_instance_count": spec.has_instance_count,
                "counts_toward_uiri": spec.counts_toward_uiri,
                **checklist,
            },
        )
        for sub in spec.subcategories:
            subcategory_model.objects.update_or_create(
                schema=schema,
                slug=sub.slug,
                defaults={
                    "attribute": attribute,
                    "name": sub.name,
                    "colour": sub.colour,
                    "style": sub.style,
                    "description": sub.description,
                    "position": sub.position,
                },
            )
    return schema
