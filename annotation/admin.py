"""Django admin for every annotation model. Judgment data is read-only here: judgments change only through
the services (which validate and version them), never by hand in the admin; so is what names them or keeps them
as they were: a round's state, kind and number, an opened round's set and queues (nothing added, the round never
deleted; checked under the round's lock, so a round opened meanwhile is seen opened), an item's coder, turn and
feedback lock, a member's role, alias and panel place (members are shown and taken off, never added or changed:
an archived study's not even taken off), and a frozen schema with its attributes and subcategories. A JSON field
refuses here what its column cannot store."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import JSONField
from django.forms.fields import InvalidJSONInput
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import format_html

from annotation import models, selectors
from annotation.checklists import checklist_item_problems
from annotation.schema_document import SchemaDocumentError, ari_cluster_problems, index_thresholds
from annotation.services import schema_is_frozen, study_member_remove
from calibration.services import round_close
from common.errors import RowError, json_line, json_unstorable
from metrics.services import metric_run_request


class StorableJSONField(forms.JSONField):
    """A JSON field of the admin's forms that refuses, in its own words, what Django's would pass on to PostgreSQL
    and fail there with a 500: text with NUL or a lone surrogate, NaN and Infinity (``common.errors.json_unstorable``),
    nesting deeper than Python reads and integers longer than it reads (``common.errors.json_line``)."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value not in self.empty_values and (refusal := _json_refusal(value)):
            raise ValidationError(refusal, code="invalid")
        return super().to_python(value)

    def bound_data(self, data: Any, initial: Any) -> Any:
        # The form shown again keeps what was typed: the value read from it could not be written back into the page
        # (a lone surrogate) or read at all (nested too deeply).
        if isinstance(data, str) and not self.disabled and _json_refusal(data):
            return InvalidJSONInput(data)
        return super().bound_data(data, initial)


def _json_refusal(text: str) -> str | None:
    value = json_line(1, text, field="value")
    return value.message if isinstance(value, RowError) else json_unstorable(value)


class AnnotationAdmin(admin.ModelAdmin):
    """The admin of every annotation model: its JSON fields are ``StorableJSONField``."""

    formfield_overrides = {JSONField: {"form_class": StorableJSONField}}


# A schema is frozen once a study using it has been opened (``annotation.services.schema_is_frozen``; the database
# refuses any change of it, its attributes and subcategories): the admin shows a frozen schema and its parts
# read-only, saying why, and refuses to add a part to it or delete one in words, where the database's refusal was a
# 500.


def _schema_of(obj: Any) -> models.Schema | None:
    return obj if isinstance(obj, models.Schema) or obj is None else obj.schema


def _frozen(obj: Any) -> models.Schema | None:
    """The schema of ``obj`` (a schema or one of its parts) when it is frozen."""
    schema = _schema_of(obj)
    return schema if schema is not None and schema.pk is not None and schema_is_frozen(schema=schema) else None


def _frozen_refusal(schema: models.Schema) -> str:
    return f"schema {schema.slug} is frozen: a study using it has been opened"


class SchemaPartAdmin(AnnotationAdmin):
    """The admin of a schema and its parts: read-only once the schema is frozen."""

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and _frozen(obj) is None

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and _frozen(obj) is None

    def change_view(self, request: Any, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> Any:
        obj = self.get_object(request, unquote(object_id))
        if request.method == "GET" and (schema := _frozen(obj)) is not None:
            messages.info(request, f"{_frozen_refusal(schema)}, so it is shown read-only")
        return super().change_view(request, object_id, form_url, extra_context)

    def get_deleted_objects(self, objs: Any, request: Any) -> Any:
        """The confirmation page of "delete selected" says why a frozen schema's parts cannot be deleted (listed
        as protected, in place of a permission the account seems to lack)."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        frozen = {schema.slug: schema for obj in objs if (schema := _frozen(obj)) is not None}
        if not frozen:
            return deleted, counts, perms_needed, protected
        return deleted, counts, set(), [*protected, *(_frozen_refusal(frozen[slug]) for slug in sorted(frozen))]


class SchemaPartForm(forms.ModelForm):
    """A part added to (or moved into) a frozen schema is refused in words (the database refuses it too)."""

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if (schema := _frozen(data.get("schema"))) is not None:
            raise ValidationError(_frozen_refusal(schema))
        return data


class FrozenInlineMixin:
    """An inline of a frozen schema's page, or of its part's page: nothing added, changed or deleted."""

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return super().has_add_permission(request, obj) and _frozen(obj) is None  # type: ignore[misc]

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and _frozen(obj) is None  # type: ignore[misc]

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and _frozen(obj) is None  # type: ignore[misc]


class AttributeInline(FrozenInlineMixin, admin.TabularInline):
    model = models.AttributeDefinition
    fields = ("position", "code", "name", "group", "unit", "cluster", "scale_min", "scale_max", "level")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


class SchemaForm(forms.ModelForm):
    """A definition whose report thresholds the report could not use (UIRI's bands, the trajectories' flat slope,
    the coupling's significance) is refused in the words of an install (``schema_document.index_thresholds``): the
    metric runs read them from it. So is an ``indices.ari.clusters`` that is not the clusters of the schema's
    attributes ARI averages (``schema_document.ari_cluster_problems``)."""

    class Meta:
        model = models.Schema
        fields = ("slug", "version", "name", "description", "definition")

    def clean_definition(self) -> Any:
        definition = self.cleaned_data.get("definition")
        if isinstance(definition, dict):
            try:
                index_thresholds(definition.get("indices"))
            except SchemaDocumentError as error:
                raise ValidationError(error.errors) from error
            if self.instance.pk is not None and isinstance(definition.get("indices"), dict) and (
                    problems := ari_cluster_problems(definition["indices"], self.instance.attributes.all())):
                raise ValidationError(problems)
        return definition


@admin.register(models.Schema)
class SchemaAdmin(SchemaPartAdmin):
    form = SchemaForm
    list_display = ("slug", "version", "name", "created_at")
    search_fields = ("slug", "name")
    readonly_fields = ("created_at",)
    inlines = [AttributeInline]


class SubcategoryInline(FrozenInlineMixin, admin.TabularInline):
    model = models.SpanSubcategory
    fields = ("position", "slug", "name", "colour", "style")
    extra = 0


class AttributeDefinitionForm(SchemaPartForm):
    """Session checklist items (text = name, type, crisis types) are checked like ``checklists.checklist_item_save``
    does, no attribute of a frozen schema changes (``SchemaPartForm``), and an attribute's cluster, unit or risk
    encoding may not make the clusters ARI averages differ from the schema's ``indices.ari.clusters``
    (``schema_document.ari_cluster_problems``)."""

    class Meta:
        model = models.AttributeDefinition
        fields = [f.name for f in models.AttributeDefinition._meta.fields if f.editable and f.name != "id"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("item_type") or data.get("crisis_types"):
            if data.get("unit") != models.AttributeDefinition.Unit.SESSION:
                self.add_error("unit", "a checklist item is coded once per session")
            problems = checklist_item_problems(item_id=data.get("code") or "", text=data.get("name") or "",
                                               item_type=data.get("item_type") or "",
                                               crisis_types=data.get("crisis_types") or [])
            for name, message in problems.items():
                self.add_error({"item_id": "code", "text": "name"}.get(name, name), message)
        schema = data.get("schema")
        indices = schema.definition.get("indices") if schema is not None else None
        if schema is not None and isinstance(indices, dict):
            this = models.AttributeDefinition(unit=data.get("unit") or "", cluster=data.get("cluster") or "",
                                              risk=data.get("risk"))
            others = schema.attributes.exclude(pk=self.instance.pk) if self.instance.pk else schema.attributes.all()
            for message in ari_cluster_problems(indices, [*others, this]):
                self.add_error("cluster", message)
        return data


@admin.register(models.AttributeDefinition)
class AttributeDefinitionAdmin(SchemaPartAdmin):
    form = AttributeDefinitionForm
    list_display = ("code", "name", "schema", "group", "unit", "cluster", "scale_min", "scale_max", "level",
                    "item_type", "crisis_types")
    list_filter = ("schema", "group", "unit", "cluster", "level", "item_type")
    search_fields = ("code", "name", "definition")
    inlines = [SubcategoryInline]

    def get_deleted_objects(self, objs: Any, request: Any) -> Any:
        """A deletion (one attribute, or "delete selected") that would leave a schema's ``indices.ari.clusters``
        out of line with the clusters ARI averages (the last risk-encoded response attribute of a listed cluster
        gone) is refused on the confirmation page with the reason, as an edit is (``AttributeDefinitionForm``):
        Django deletes nothing while the page lists a reason as protected."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        gone: dict[int, list[models.AttributeDefinition]] = {}
        for attribute in objs:
            gone.setdefault(attribute.schema_id, []).append(attribute)
        for attributes in gone.values():
            schema = attributes[0].schema
            indices = schema.definition.get("indices") if isinstance(schema.definition, dict) else None
            if not isinstance(indices, dict):
                continue
            left = schema.attributes.exclude(pk__in=[a.pk for a in attributes])
            codes = ", ".join(sorted(a.code for a in attributes))
            protected = [*protected, *(f"schema {schema.slug}, deleting {codes}: {problem}"
                                       for problem in ari_cluster_problems(indices, left))]
        return deleted, counts, perms_needed, protected


class SpanSubcategoryForm(SchemaPartForm):
    class Meta:
        model = models.SpanSubcategory
        fields = [f.name for f in models.SpanSubcategory._meta.fields if f.editable and f.name != "id"]


@admin.register(models.SpanSubcategory)
class SpanSubcategoryAdmin(SchemaPartAdmin):
    form = SpanSubcategoryForm
    list_display = ("slug", "name", "attribute", "colour", "style")
    list_filter = ("schema",)
    search_fields = ("slug", "name")


# Who is a member and in which role is what their codings are read as (a role is the member's, not the coding's):
# people are added on the study page (annotation.services.study_member_add: aliases, former members, archived
# studies), methods and references by register_coder or the API, the panel decided on the panel page (audited).
# The admin shows members and takes them off through the service; it adds and changes none.
MEMBER_FIXED = ("study", "user", "role", "alias", "retained", "method_name", "method_version", "method_prompt_id")


class MemberInline(admin.TabularInline):
    model = models.StudyMember
    fields = MEMBER_FIXED[1:]
    readonly_fields = fields
    extra = 0
    can_delete = False  # taken off through study_member_remove (the member list below, or the study page)

    def has_add_permission(self, request, obj=None):
        return False


# A round's state changes only through the services (opened, closed, reopened with a recorded reason and the
# feedback lock), and its kind and number name its judgments: the admin shows them and changes none of them.
ROUND_FIXED = ("study", "kind", "number", "status", "gold_pool", "opened_at", "closed_at")


class RoundInline(admin.TabularInline):
    model = models.Round
    fields = ("kind", "number", "status", "opened_at", "closed_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


# A study is made on the New study page (or by the API, or manage.py create_study: one service, its checks and its
# audit event) and its settings change on its settings page (``study_settings_update``: checked, locked, recorded);
# what its data depends on (its slug, schema and model slots) never changes, and its state only through the
# services (opened with its first round, archived on its page). So the admin shows a study read-only. Before, it let
# anyone set an open study back to "setting up" (which unfreezes its schema under its codings), change its schema
# (a 500: the database refuses it), change settings unrecorded, or add a study past every check.
@admin.register(models.Study)
class StudyAdmin(AnnotationAdmin):
    list_display = ("slug", "name", "schema", "status", "method_labels", "is_synthetic", "created_at")
    list_filter = ("status", "is_synthetic", "schema", "method_labels")
    search_fields = ("slug", "name")
    inlines = [MemberInline, RoundInline]
    actions = ["compute_metrics"]

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def change_view(self, request: Any, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> Any:
        study = self.get_object(request, unquote(object_id))
        if request.method == "GET" and study is not None:
            messages.info(request, format_html(
                "A study's settings change on <a href=\"{}\">its settings page</a>, recorded; its slug, schema and "
                "model slots never change.", reverse("study-settings", args=[study.slug])))
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.action(description="Compute the metrics report (runs in a worker)", permissions=["view"])
    def compute_metrics(self, request, queryset):
        for study in queryset:
            metric_run_request(study=study, by=request.user, trigger="admin")
        self.message_user(request, f"{queryset.count()} metric run(s) queued; see Metric runs for progress.")


@admin.register(models.StudyMember)
class StudyMemberAdmin(AnnotationAdmin):
    list_display = ("study", "user", "role", "alias", "retained", "method_name", "method_version", "method_prompt_id")
    list_filter = ("study", "role", "retained")
    search_fields = ("user__username", "alias")
    readonly_fields = MEMBER_FIXED

    def has_add_permission(self, request):
        return False

    # Deleting a member is taking them off the study: through the service, which keeps their role for their
    # judgments (models.FormerStudyMember), records it in the audit trail and refuses what the study page refuses
    # (an archived study, a coder with session labels): the refusal is said on the page, nothing is taken off.
    def delete_model(self, request, obj):
        study_member_remove(member=obj, by=request.user)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for member in queryset.select_related("study", "user"):
                study_member_remove(member=member, by=request.user)

    def delete_view(self, request, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except ValidationError as refused:
            return self._refused(request, refused, "admin:annotation_studymember_change", object_id)

    def changelist_view(self, request, extra_context=None):
        try:
            return super().changelist_view(request, extra_context)
        except ValidationError as refused:
            return self._refused(request, refused, "admin:annotation_studymember_changelist")

    def _refused(self, request, refused: ValidationError, page: str, *args: Any):
        self.message_user(request, f"Nobody was taken off: {'; '.join(refused.messages)}", level=messages.ERROR)
        return redirect(page, *args)


def _draft_locked(round_: models.Round) -> bool:
    """Lock the round's row until the admin's transaction ends (the admin saves and deletes in one); whether it is
    a draft. The round's opening (an UPDATE of the row) waits for the lock, and so do the queue items and set items
    written into it meanwhile (their insert locks the row they point to), so what was checked stays true until the
    admin's write commits."""
    status = models.Round.objects.select_for_update().filter(pk=round_.pk).values_list("status", flat=True).first()
    return status == models.Round.Status.DRAFT


def _draft(round_: models.Round, what: str) -> models.Round:
    """The round, while it is a draft (``_draft_locked``): an opened round's set and queues are what its coders were
    given."""
    if not _draft_locked(round_):
        raise ValidationError(f"{round_.name} is no longer a draft: its {what} are fixed")
    return round_


@admin.register(models.Round)
class RoundAdmin(AnnotationAdmin):
    list_display = ("__str__", "study", "kind", "number", "status", "opened_at", "closed_at")
    list_filter = ("study", "kind", "status")
    actions = ["close_rounds"]

    def get_readonly_fields(self, request, obj=None):
        return ("status", "opened_at", "closed_at") if obj is None else ROUND_FIXED

    # No page deletes a round: a draft nobody was given anything of yet goes here, an opened one (or a draft main
    # round with its queues) stays with what its coders were given. The bulk delete asks this for every row.
    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and (
            obj is None or (obj.status == models.Round.Status.DRAFT and not obj.assignments.exists()))

    # The permission is asked before the admin's transaction; asked again here under the round's lock, so a round
    # opened or given queues meanwhile is refused (403), nothing deleted.
    def delete_model(self, request, obj):
        if not (_draft_locked(obj) and not obj.assignments.exists()):
            raise PermissionDenied(f"{obj.name} is no longer a draft without queues: it is not deleted")
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for round_ in queryset:
                self.delete_model(request, round_)

    @admin.action(description="Close the round (locks judgments, starts a metrics run)", permissions=["change"])
    def close_rounds(self, request, queryset):
        for round_ in queryset:
            try:
                round_close(round=round_, by=request.user)
            except ValidationError as error:
                self.message_user(request, f"{round_}: {'; '.join(error.messages)}", level="error")


def _turn_placeable(form: forms.ModelForm, data: dict[str, Any]) -> None:
    """A round's turn makes its conversation the study's: one the study's kind cannot place is refused on the turn
    (``selectors.conversations_unplaceable``), as the calibration set's services refuse it."""
    round_ = data.get("round") or (form.instance.round if form.instance.round_id else None)
    turn = data.get("turn")
    if round_ is not None and turn is not None and (unusable := selectors.conversations_unplaceable(
            study=round_.study, conversations=[turn.conversation_id])):
        form.add_error("turn", unusable[turn.conversation_id])


class RoundItemForm(forms.ModelForm):
    class Meta:
        model = models.RoundItem
        fields = ("round", "turn", "position")

    def clean_round(self) -> models.Round:
        return _draft(self.cleaned_data["round"], "items")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        _turn_placeable(self, data)
        return data


class DraftRoundPartAdmin(AnnotationAdmin):
    """A part of a round that is fixed once the round opens (its set's items, its coders' queue items): changed or
    deleted only while the round is a draft, asked again under the round's lock (``_draft_locked``), so a round
    opened meanwhile is refused (403), nothing changed; a change is checked so by the form."""

    fixed_what = "items"

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and (obj is None or obj.round.status == "draft")

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and (obj is None or obj.round.status == "draft")

    def delete_model(self, request, obj):
        if not _draft_locked(obj.round):
            raise PermissionDenied(f"{obj.round.name} is no longer a draft: its {self.fixed_what} are fixed")
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for item in queryset.select_related("round"):
                self.delete_model(request, item)


# A round's set is fixed once it opens (annotation.services.round_items_set): its items were coded as they are.
@admin.register(models.RoundItem)
class RoundItemAdmin(DraftRoundPartAdmin):
    form = RoundItemForm
    list_display = ("round", "position", "turn")
    list_filter = ("round__study", "round")
    list_select_related = ("round__study", "turn__conversation__dataset")
    raw_id_fields = ("turn",)


class AssignmentForm(forms.ModelForm):
    class Meta:
        model = models.Assignment
        fields = [f.name for f in models.Assignment._meta.fields if f.editable and f.name != "id"]

    def clean_round(self) -> models.Round:
        return _draft(self.cleaned_data["round"], "queues")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.instance.pk is not None:  # its round is not on the form: checked here, under the round's lock
            _draft(self.instance.round, "queues")
        _turn_placeable(self, data)
        return data


# A coder's queue is what they were given once the round opens: its items are neither moved, changed nor deleted by
# hand then (a moved item would move the coder's pages under them). Whose item it is and whether it was compared
# with gold in feedback never change: the coder's judgments of the turn are found by them, and the lock keeps those
# judgments as they were compared (calibration.services.round_reopen). The comment and flags are the coder's own
# words, changed on their turn page only.
@admin.register(models.Assignment)
class AssignmentAdmin(DraftRoundPartAdmin):
    form = AssignmentForm
    fixed_what = "queues"
    list_display = ("round", "coder", "position", "turn", "is_check_item", "completed_at", "active_seconds")
    list_filter = ("round__study", "round", "is_check_item")
    search_fields = ("coder__username",)
    list_select_related = ("round__study", "coder", "turn__conversation__dataset")
    raw_id_fields = ("turn",)

    def get_readonly_fields(self, request, obj=None):
        fixed = ("completed_at", "active_seconds", "comment", "flags")
        return fixed if obj is None else ("round", "coder", "turn", "is_check_item", "feedback_locked", *fixed)


class SpanInline(admin.TabularInline):
    model = models.Span
    fields = ("subcategory", "start", "end")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class RevisionInline(admin.TabularInline):
    """The judgment's history, read-only (the database refuses to change it anyway)."""

    model = models.JudgmentRevision
    fields = ("version", "at", "changed_by", "source", "before", "after")
    readonly_fields = fields
    ordering = ("-at", "-id")
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(models.Judgment)
class JudgmentAdmin(AnnotationAdmin):
    list_display = ("round", "coder", "is_gold", "attribute", "turn", "response", "score", "instance_count", "version")
    list_filter = ("round__study", "round", "is_gold", "attribute__group", "attribute")
    search_fields = ("coder__username", "conversation__external_id")
    list_select_related = ("round__study", "coder", "attribute", "turn__conversation__dataset", "response__turn")
    readonly_fields = [f.name for f in models.Judgment._meta.fields]
    inlines = [SpanInline, RevisionInline]

    def has_add_permission(self, request):
        return False

    # Nothing of a judgment changes here, who agreed to a gold value included: recorded on the consensus screen,
    # under its rule (annotation.services.gold_agreement_problems) and with the judgment's history.
    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.WorkshopNote)
class WorkshopNoteAdmin(AnnotationAdmin):
    list_display = ("round", "attribute", "turn", "response", "written_by", "updated_at")
    list_filter = ("round__study", "round", "attribute")
    search_fields = ("text",)
    raw_id_fields = ("turn", "response")


@admin.register(models.ReviewerAlert)
class ReviewerAlertAdmin(AnnotationAdmin):
    list_display = ("study", "reviewer", "agreement", "threshold", "n_items", "created_at", "resolved_at", "withdrawn")
    list_filter = ("study", "resolved_at", "withdrawn")
    readonly_fields = ("study", "reviewer", "agreement", "threshold", "n_items", "created_at", "withdrawn")

    # An alert is raised by the check items and resolved on the study's page (annotation.services.alert_resolve,
    # which audits it): an add form here saved a row without its figures (a 500), a change one an unaudited
    # resolution.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
