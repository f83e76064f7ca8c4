import json

from django import template

register = template.Library()


@register.filter
def get_item(mapping, key):
    return mapping.get(key) if mapping else None


@register.filter
def spans_json(judgment) -> str:
    """The judgment's spans as the JSON the page keeps in its form (offsets are Python code-point offsets)."""
    if judgment is None:
        return "[]"
    return json.dumps(
        [{"start": s.start, "end": s.end, "subcategory": s.subcategory.slug} for s in judgment.spans.all()]
    )


@register.filter
def anchors_title(attribute) -> str:
    """Definition and anchors as one tooltip text (the hover-away help)."""
    lines = [attribute.definition] + [f"{value}: {text}" for value, text in sorted(attribute.anchors.items())]
    return "\n".join(lines)


@register.filter
def spans_compact(judgment) -> str:
    """The judgment's spans as the turn page's compact data: "start end subcategory" joined by commas (slugs have
    no spaces or commas); the page keeps them as JSON once loaded."""
    if judgment is None:
        return ""
    return ",".join(f"{s.start} {s.end} {s.subcategory.slug}" for s in judgment.spans.all())
