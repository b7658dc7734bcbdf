"""The steward review surface (spec §7 "Operator fallback"): the clarification list with
filters and the Needs-attention queue, a page to decide from, the dead-letter digest, and
the tenant's clarify policy. Actions call the same services as the API."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import (
    Case,
    IntegerField,
    JSONField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.utils.html import format_html

from common.errors import DomainError
from common.times import TimeParseError, iso, parse_us
from graph.models import NodeVersion
from graph.timeline import versions_svg
from tenancy.models import Person, Rights
from tenancy.steward_admin import TenantScopedAdmin, steward_of

from .answering import steward_may_override
from .errors import StewardViewStale
from .models import (
    AuditEvent,
    BindingStatus,
    Clarification,
    ClarifyPolicy,
    ResponseRecord,
    Severity,
    State,
)
from .policy import CHANNEL_NAMES
from .reports import clarification_detail, uuid_or_none
from .selectors import needs_steward_attention_q, waiting_on_away_q
from .stewardship import (
    POLICY_FIELDS,
    attestation_confirm,
    clarification_override,
    clarification_reask,
    clarification_uphold,
    clarify_policy_update,
    erase_person_attribution,
    open_disputes,
    people_of,
)
from .trail import trail_for_people

# Badge backgrounds under white 11px text: each at least 4.5:1 against white (WCAG AA,
# axe-core's color-contrast; tests/steward/test_admin.py checks the ratios).
STATE_COLOURS: dict[str, str] = {
    State.OPEN: "#2563eb",
    State.ATTESTED: "#7c3aed",
    State.PARTIALLY_CONFIRMED: "#0e7490",
    State.ANSWERED: "#15803d",
    State.CONFLICTED: "#dc2626",
    State.EXPIRED: "#b45309",
    State.DEAD_LETTERED: "#4b5563",
}
SEVERITY_COLOURS: dict[str, str] = {
    "low": "#6b7280",
    "normal": "#2563eb",
    "high": "#b45309",
    "critical": "#dc2626",
}


def badge(text: str, colour: str) -> str:
    return format_html(
        '<span style="background:{};color:#fff;border-radius:9px;padding:1px 8px;'
        'font-size:11px;white-space:nowrap">{}</span>',
        colour,
        text.replace("_", " "),
    )


class WaitingOnAwayFilter(admin.SimpleListFilter):
    title = "waiting on someone away"
    parameter_name = "away"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Waiting on someone away")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "yes":
            return queryset.filter(waiting_on_away_q())
        return queryset


class NeedsAttentionFilter(admin.SimpleListFilter):
    title = "needs attention"
    parameter_name = "attention"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Needs attention")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "yes":
            return queryset.filter(needs_steward_attention_q())
        return queryset


class OverrideForm(forms.Form):
    answer_index = forms.TypedChoiceField(
        coerce=int, required=False, empty_value=None, label="Choose a candidate"
    )
    valid_from = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    valid_to = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    reason = forms.CharField(required=False, max_length=500)

    def __init__(self, *args: Any, clarification: Clarification, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice_field = self.fields["answer_index"]
        assert isinstance(choice_field, forms.ChoiceField)
        choice_field.choices = [("", "— enter an interval instead —")] + [
            (str(i), c.get("label") or f"candidate {i}")
            for i, c in enumerate(clarification.candidates)
        ]


def _date_us(value: Any) -> int | None:
    return parse_us(f"{value.isoformat()}T00:00:00Z") if value else None


def _display_report(report: dict[str, Any], tenant: Any) -> dict[str, Any]:
    """The clarification report for people: µs times as dates, delivery candidates by
    name (the CLI's `--json` keeps the raw values; the events: `clarify.trail`)."""
    ids = {
        uuid_or_none(h.get(key))
        for h in report["deliveryHistory"]
        for key in ("candidate", "delegate", "onBehalfOf")
    }
    names = {
        str(p.pk): p.name
        for p in Person.objects.filter(tenant=tenant, pk__in=[i for i in ids if i is not None])
    }
    return {
        **report,
        "candidates": [
            {**c, "interval": f"{iso(c.get('validFrom'))} → {iso(c.get('validTo'))}"}
            for c in report["candidates"]
        ],
        "responses": [{**r, "responseTx": iso(r["responseTx"])} for r in report["responses"]],
        "deliveryHistory": [
            {
                **h,
                "at": iso(h["at"]),
                "candidateName": names.get(str(h["candidate"]), "(erased)")
                if h.get("candidate")
                else "steward",
                "routing": _routing_note(h, names),
            }
            for h in report["deliveryHistory"]
        ],
    }


def _routing_note(entry: dict[str, Any], names: dict[str, str]) -> str:
    """An away candidate's delegation, as the delivery history shows it."""
    if entry.get("onBehalfOf"):
        return f"on behalf of {names.get(str(entry['onBehalfOf']), '(erased)')}"
    if entry.get("delegate"):
        return f"delegate {names.get(str(entry['delegate']), '(erased)')}"
    return ""


DIGEST_PER_PAGE = 50
POSITION_PREFIX = "position_"


def reask_order(post: Any) -> list[str]:
    """The re-ask ranking from the decide page's position inputs (`position_<person id>`:
    1 is asked first; blank: not asked), as person ids in that order. Raises ValueError
    (with the message for the steward) on a position that is not a whole number from 1 or
    is given twice, and Person.DoesNotExist on an id that is not a person id."""
    positions: dict[int, str] = {}
    for key, value in post.items():
        if not key.startswith(POSITION_PREFIX) or not str(value).strip():
            continue
        person_id = uuid_or_none(key[len(POSITION_PREFIX) :])
        if person_id is None:
            raise Person.DoesNotExist
        try:
            position = int(str(value).strip())
        except ValueError:
            position = 0
        if position < 1:
            raise ValueError("Positions are whole numbers from 1 (1 is asked first).")
        if position in positions:
            raise ValueError(f"Position {position} is given twice: give each person their own.")
        positions[position] = str(person_id)
    return [positions[n] for n in sorted(positions)]


@admin.register(Clarification)
class ClarificationAdmin(TenantScopedAdmin):
    list_display = (
        "target_label",
        "kind",
        "severity_badge",
        "state_badge",
        "quorum_state",
        "created_at",
    )
    list_filter = (NeedsAttentionFilter, WaitingOnAwayFilter, "state", "severity", "kind")
    search_fields = ("target__versions__search_text",)
    ordering = ("-created_at", "pk")
    list_per_page = 50
    show_full_result_count = False
    change_form_template = "admin/clarify/clarification/decide.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        current = NodeVersion.objects.filter(node_id=OuterRef("target_id"), tx_to__isnull=True)
        return (
            super()
            .get_queryset(request)
            .annotate(
                target_properties=Subquery(
                    current.values("properties")[:1], output_field=JSONField()
                ),
                # Sorting by the severity column means by risk, not alphabetically.
                severity_rank=Case(
                    *(When(severity=s, then=Value(Severity.rank(s))) for s in Severity.values),
                    output_field=IntegerField(),
                ),
            )
        )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        qs, duplicates = super().get_search_results(request, queryset, search_term)
        person = steward_of(request)
        if search_term and person is not None:
            matches = Person.objects.filter(tenant=person.tenant).filter(
                Q(name__icontains=search_term) | Q(email__icontains=search_term)
            )
            ids = [str(p.pk) for p in matches[:20]]
            by_person = Q(pk__in=[])
            for pid in ids:
                by_person |= Q(asked__icontains=pid) | Q(responses__responder=pid)
            if ids:
                qs = qs | queryset.filter(by_person)
                duplicates = True
        return qs, duplicates

    @admin.display(description="target", ordering="target__key")
    def target_label(self, obj: Clarification) -> str:
        props = getattr(obj, "target_properties", None) or {}
        return str(props.get("name") or obj.target_id)

    @admin.display(description="severity", ordering="severity_rank")
    def severity_badge(self, obj: Clarification) -> str:
        return badge(obj.severity, SEVERITY_COLOURS.get(obj.severity, "#6b7280"))

    @admin.display(description="state", ordering="state")
    def state_badge(self, obj: Clarification) -> str:
        return badge(obj.state, STATE_COLOURS.get(obj.state, "#6b7280"))

    def get_urls(self) -> list[Any]:
        return [
            path("digest/", self.admin_site.admin_view(self.digest_view), name="clarify_digest"),
            path("queue/", self.admin_site.admin_view(self.queue_view), name="clarify_queue"),
            *super().get_urls(),
        ]

    def queue_view(self, request: HttpRequest) -> HttpResponse:
        url = reverse("admin:clarify_clarification_changelist")
        return HttpResponseRedirect(f"{url}?attention=yes")

    def digest_view(self, request: HttpRequest) -> HttpResponse:
        """Dead-lettered clarifications with their per-candidate reason codes, the most
        recently dead-lettered first, DIGEST_PER_PAGE a page (`?p=N`). Candidates are shown
        by name: a constant number of queries whatever the page holds."""
        paginator = Paginator(
            self.get_queryset(request)
            .filter(state=State.DEAD_LETTERED)
            .order_by("-updated_at", "pk"),
            DIGEST_PER_PAGE,
        )
        page = paginator.get_page(request.GET.get("p"))
        clarifications = list(page.object_list)
        events = {
            e.clarification_id: e
            for e in AuditEvent.objects.filter(
                clarification__in=clarifications, type="dead_lettered"
            ).order_by("at")
        }
        reasons = {
            c.pk: (events[c.pk].detail.get("skipReasons", []) if c.pk in events else [])
            for c in clarifications
        }
        steward = steward_of(request)
        assert steward is not None  # admin_view lets stewards only in
        ids = {uuid_or_none(r.get("candidate")) for rs in reasons.values() for r in rs}
        names = {
            str(pk): name
            for pk, name in Person.objects.filter(
                tenant=steward.tenant, pk__in=[i for i in ids if i is not None]
            ).values_list("pk", "name")
        }
        rows = [
            {
                "clarification": c,
                "name": self.target_label(c),
                "reasons": [
                    {
                        **r,
                        "candidateName": names.get(str(r.get("candidate")), "(erased)")
                        if r.get("candidate")
                        else "steward",
                    }
                    for r in reasons[c.pk]
                ],
            }
            for c in clarifications
        ]
        return render(
            request,
            "admin/clarify/digest.html",
            {
                **self.admin_site.each_context(request),
                "rows": rows,
                "page": page,
                "title": "Steward digest: dead-lettered clarifications",
            },
        )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        clar = self.get_object(request, object_id)
        steward = steward_of(request)
        if clar is None or steward is None:
            # ModelAdmin's own "does not exist" redirect, private in Django and so not in its stubs
            return self._get_obj_does_not_exist_redirect(  # type: ignore[attr-defined]
                request, self.opts, object_id
            )
        if request.method == "POST":
            self._act(request, clar, steward)
            return HttpResponseRedirect(request.path)
        detail = clarification_detail(clar)
        report = _display_report(detail, clar.tenant)
        versions = list(NodeVersion.objects.filter(node_id=clar.target_id).order_by("tx_from"))
        timeline = [
            {
                "seq": v.seq,
                "valid": f"{iso(v.valid_from)} → {iso(v.valid_to)}",
                "recorded": f"{iso(v.tx_from)} → {iso(v.tx_to)}",
                "confidence": v.confidence,
                "evidence": v.evidence_class,
                "pending": v.pending,
                "bound": v.tx_from == clar.fact_version_tx,
            }
            for v in versions
        ]
        span = ""
        if clar.span_start is not None and clar.span_end is not None:
            span = clar.source_version.text[clar.span_start : clar.span_end]
        attestations = ResponseRecord.objects.filter(
            clarification=clar, binding_status=BindingStatus.ATTESTATION
        )
        people = (
            Person.objects.filter(tenant=clar.tenant, erased_at__isnull=True)
            .exclude(role=Rights.STEWARD)
            .order_by("name", "pk")
        )
        disputes = open_disputes(clar)
        dispute_ids = {str(r.pk) for r in disputes}
        bound = next((v for v in timeline if v["bound"]), None)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Clarification: {report['targetName']}",
            "opts": self.opts,
            "original": clar,
            "report": report,
            "trail": trail_for_people(clar, detail["events"]),
            "timeline": timeline,
            "timeline_svg": versions_svg(versions, bound_tx=clar.fact_version_tx),
            "span": span,
            "source": clar.source_version.source,
            "override_form": OverrideForm(clarification=clar),
            "attestations": attestations,
            "people": people,
            "state_badge": self.state_badge(clar),
            "severity_badge": self.severity_badge(clar),
            # An answered clarification is upheld or corrected from its disputes above.
            "can_override": clar.state != State.ANSWERED
            and steward_may_override(
                rights=Rights.STEWARD,
                state=clar.state,
                allow_override=clar.allows_steward_override,
                disputed=bool(disputes),
            ),
            # Post-binding disagreements awaiting a steward, and the binding they dispute.
            "disputes": [r for r in report["responses"] if r["responseId"] in dispute_ids],
            "dispute_ids": dispute_ids,
            "disputes_through": disputes[-1].seq if disputes else None,
            "bound_valid": bound["valid"] if bound else "",
            **(extra_context or {}),
        }
        return render(request, self.change_form_template, context)

    def _act(self, request: HttpRequest, clar: Clarification, steward: Person) -> None:
        """One steward action from the decide page: parse the form, call the service,
        say what happened (the services open the transactions)."""
        actions = {
            "override": self._override,
            "uphold": self._uphold,
            "confirm": self._confirm,
            "reask": self._reask,
            "erase": self._erase,
        }
        act = actions.get(str(request.POST.get("action")))
        if act is None:
            messages.error(request, "Unknown action.")
            return
        try:
            act(request, clar, steward)
        except (
            ResponseRecord.DoesNotExist,
            Person.DoesNotExist,
            ValueError,
            ValidationError,
            TimeParseError,
        ):
            messages.error(request, "That record does not exist in this clarification.")
        except StewardViewStale as exc:
            messages.error(request, exc.detail)
        except DomainError as exc:
            messages.error(request, f"Refused ({exc.code}): {exc.detail}")

    def _override(self, request: HttpRequest, clar: Clarification, steward: Person) -> None:
        form = OverrideForm(request.POST, clarification=clar)
        if not form.is_valid():
            messages.error(request, f"Invalid override: {form.errors.as_text()}")
            return
        data = form.cleaned_data
        interval = None
        if data["answer_index"] is None:
            interval = (_date_us(data["valid_from"]), _date_us(data["valid_to"]))
        outcome = clarification_override(
            clarification=clar,
            steward=steward,
            answer_index=data["answer_index"],
            interval=interval,
            reason=data["reason"] or "",
            channel="admin",
        )
        messages.success(request, f"Override recorded: {outcome.body['outcome']}.")

    def _uphold(self, request: HttpRequest, clar: Clarification, steward: Person) -> None:
        """Uphold the bound answer over the disagreements the page showed (it posts the
        `seq` of the latest one). Changing the bound interval is not offered: a
        clarification binds once (README "Steward review")."""
        n = clarification_uphold(
            clarification=clar,
            steward=steward,
            disputes_through=str(request.POST.get("disputes_through", "")),
            reason=str(request.POST.get("reason", "")).strip()[:500],
        )
        messages.success(
            request,
            f"Binding upheld: {n} disagreement{'s' if n != 1 else ''} resolved; "
            "the clarification has left Needs attention.",
        )

    def _confirm(self, request: HttpRequest, clar: Clarification, steward: Person) -> None:
        outcome = attestation_confirm(
            clarification=clar, steward=steward, response_id=request.POST.get("response_id", "")
        )
        messages.success(request, f"Attestation confirmed: {outcome.body['outcome']}.")

    def _reask(self, request: HttpRequest, clar: Clarification, steward: Person) -> None:
        try:
            ids = reask_order(request.POST)
        except ValueError as exc:
            messages.error(request, str(exc))
            return
        if not ids:
            messages.error(request, "Choose at least one person to ask.")
            return
        ranking = people_of(clar.tenant, ids)
        clarification_reask(clarification=clar, ranking=ranking, actor=steward)
        messages.success(request, "Delivery re-enqueued for the new candidates.")

    def _erase(self, request: HttpRequest, clar: Clarification, steward: Person) -> None:
        person = Person.objects.get(tenant=clar.tenant, pk=request.POST.get("person_id", ""))
        n = erase_person_attribution(tenant=clar.tenant, person=person, actor=steward, via="admin")
        messages.success(request, f"Attribution erased on {n} clarification(s).")


class ClarifyPolicyForm(forms.ModelForm):
    class Meta:
        model = ClarifyPolicy
        fields = POLICY_FIELDS
        # The channel names from the one list the check uses (the model's own help text
        # predates the email channel; changing it would be a migration of wording only).
        help_texts = {
            "channel_order": (
                'Delivery channels to try, in order, e.g. ["slack", "inbox"] (of '
                f"{', '.join(CHANNEL_NAMES)}). A person is reached on the first configured "
                "channel where they have a verified address. Empty: the CLARIFY_CHANNELS "
                "default."
            )
        }

    def clean_channel_order(self) -> Any:
        from .policy import channel_order_errors

        value = self.cleaned_data.get("channel_order")
        if value in (None, []):
            return None
        error = channel_order_errors(value)
        if error is not None:
            raise forms.ValidationError(error)
        return value

    def clean_reminder_after_hours(self) -> Any:
        from .policy import reminder_errors

        value = self.cleaned_data.get("reminder_after_hours")
        error = reminder_errors(value)
        if error is not None:
            raise forms.ValidationError(error)
        return value

    def clean_severity_elevate(self) -> Any:
        value = self.cleaned_data.get("severity_elevate")
        from .models import Kind, Severity

        if value is None:
            return None
        if not isinstance(value, dict) or any(
            k not in Kind.values or v not in Severity.values for k, v in value.items()
        ):
            raise forms.ValidationError('Use {"kind": "severity"} with known kinds and severities.')
        return value

    def clean_required_roles(self) -> Any:
        value = self.cleaned_data.get("required_roles")
        if value is None:
            return None
        if not isinstance(value, list) or not value or any(r not in Rights.values for r in value):
            raise forms.ValidationError('Use a list of roles, e.g. ["editor"].')
        return value


@admin.register(ClarifyPolicy)
class ClarifyPolicyAdmin(TenantScopedAdmin):
    """Empty fields fall back to the environment defaults. Changes apply to
    clarifications opened afterwards and are audited."""

    editable = True
    form = ClarifyPolicyForm
    list_display = (
        "tenant",
        "quorum_enabled",
        "critical_required_confirmations",
        "allow_steward_override",
        "channel_order",
        "reminder_after_hours",
        "updated_at",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        person = steward_of(request)
        return (
            person is not None and not ClarifyPolicy.objects.filter(tenant=person.tenant).exists()
        )

    def save_model(self, request: HttpRequest, obj: ClarifyPolicy, form: Any, change: bool) -> None:
        steward = steward_of(request)
        assert steward is not None
        clarify_policy_update(
            tenant=steward.tenant,
            actor=steward,
            **{f: form.cleaned_data.get(f) for f in ClarifyPolicyForm.Meta.fields},
        )
        obj.tenant = steward.tenant
        obj.pk = ClarifyPolicy.objects.get(tenant=steward.tenant).pk

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        return None
