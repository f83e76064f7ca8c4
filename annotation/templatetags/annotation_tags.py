import json
from html import escape  # what django.utils.html.escape does, without its lazy-string wrapper (80 forms a page)

from django import template
from django.utils.html import json_script
from django.utils.safestring import SafeString, mark_safe

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


def _attr_form_html(form) -> str:
    attribute, judgment = form.attribute, form.judgment
    spans = attribute.ui_has_spans
    parts = [f'<form class="attr{" has-spans" if spans else ""}" id="{escape(form.form_id)}" '
             f'data-code="{escape(attribute.code)}" data-version="{judgment.version if judgment else 0}"']
    if judgment is not None:
        if judgment.score is not None:
            parts.append(f' data-score="{int(judgment.score)}"')
        if judgment.instance_count is not None:
            parts.append(f' data-count="{int(judgment.instance_count)}"')
        if spans:
            parts.append(f' data-spans="{escape(form.spans)}"')
    parts.append("></form>")
    return "".join(parts)


@register.simple_tag
def attr_forms(forms) -> SafeString:
    """The empty autosaving forms of the turn page (``annotation.page_forms.AttrForm``), each with its judgment as
    data. Built here rather than as a template partial, and a list in one tag rather than a tag in a loop: a page has
    80 of them, and the template engine spent more CPU on them than on everything else the page does (issue 34)."""
    return mark_safe("".join(_attr_form_html(f) for f in forms))  # noqa: S308  # nosec B308 B703 - every value escaped or an int


def _response_card_html(card) -> str:
    handle, label, forms = escape(card.handle), escape(card.label), card.forms
    scored = sum(1 for f in forms if f.scored)
    groups = "".join(f'<h4>{escape(group.name)}</h4><div class="attrs">'
                     f'{"".join(_attr_form_html(f) for f in group_forms)}</div>' for group, group_forms in card.groups)
    return (f'<section class="unit response-card" data-response="{handle}" aria-labelledby="h-{handle}">'
            f'<div class="unit-text"><h3 id="h-{handle}"><span class="label">{label}</span> '
            f'<span class="unit-progress" data-total="{len(forms)}">{scored} / {len(forms)} scored</span></h3>'
            f'<div class="response-text" tabindex="0" data-response="{handle}" role="region" '
            f'aria-label="{label} text (select text to highlight)"></div>'
            f"{json_script(card.response.text, card.text_id)}"
            f'<div class="span-list" data-response="{handle}" aria-live="polite"></div></div>'
            f'<div class="unit-attrs">{groups}</div></section>\n')


@register.simple_tag
def response_cards(cards) -> SafeString:
    """The turn page's response cards (``annotation.selectors.ResponseCard``): the response's text as JSON for the
    page's script, its progress and its groups of forms (``attr_forms``). Built here for the reason ``attr_forms``
    is: five cards of a dozen values each cost the template engine as much as the rest of the page (issue 34)."""
    return mark_safe("".join(_response_card_html(card) for card in cards))  # noqa: S308  # nosec B308 B703 - every value escaped, an int or json_script's


class SchemaFragmentNode(template.Node):
    def __init__(self, nodelist, schema, key):
        self.nodelist, self.schema, self.key = nodelist, schema, key

    def render(self, context):
        schema = self.schema.resolve(context)
        key = "|".join(str(part.resolve(context)) for part in self.key)
        fragments = getattr(schema, "fragments", None)
        if fragments is None:
            return self.nodelist.render(context)
        if key not in fragments:
            fragments[key] = self.nodelist.render(context)
        return fragments[key]


@register.tag
def schema_fragment(parser, token):
    """``{% schema_fragment v.schema "name" [value ...] %}…{% endschema_fragment %}``: a part of a page that
    depends on the schema alone (and on the values named), rendered once per schema and process
    (``annotation.selectors.SchemaAttributes.fragments``) instead of on every page."""
    bits = token.split_contents()
    if len(bits) < 3:
        raise template.TemplateSyntaxError("schema_fragment takes a schema and a name")
    nodelist = parser.parse(("endschema_fragment",))
    parser.delete_first_token()
    return SchemaFragmentNode(nodelist, parser.compile_filter(bits[1]), [parser.compile_filter(b) for b in bits[2:]])
