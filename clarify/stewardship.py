"""Steward operations: override with a reason, upholding a binding over disputes,
confirming an attestation, re-ask, the audited policy change, and the erasure of a
person's attribution. The admin, the CLI and the API call these; they parse input and
render only.

`erase_person_attribution` is the architecture page's operation of that name: it rewrites
attribution while every piece of confirmation evidence survives. The full GDPR erasure
executor (spec v0.9, PR-081) is built on it and on the scrubbing primitives here
(`ErasureSubject`, `scrub`, `scrub_rows`), one layer up: `privacy.executor.gdpr_erase`.
"""

import json
import re
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet

from common.errors import Conflict, InvalidInput, NotFound
from jobs.models import Job, JobStatus
from tenancy.models import Person, Rights, Tenant

from .answering import AnswerCaller, AnswerInput, Interval, Outcome
from .errors import DisputesChanged, NothingToUphold
from .lifecycle import clarification_transition
from .models import (
    AuditEvent,
    BindingStatus,
    Clarification,
    ClarificationBinding,
    ClarifyPolicy,
    ResponseRecord,
    State,
)
from .policy import reminder_errors
from .selectors import routing_jobs, unresolved_post_binding_conflicts
from .services import (
    audit_event_append,
    clarification_answer,
    clarification_route,
)

NIL = uuid.UUID(int=0)
ERASED = "erased"
# Canonical source text is redacted character for character: spans, excerpts and fact
# provenance address it by offset, so every offset after a redaction stays true.
REDACTION_BAR = "\u2588"
SHORT_TERM = 6
# Called inside the re-ask transaction with the locked clarification, after its routing
# job is superseded and before it opens again (delivery revokes the open card nonces).
REASK_HOOKS: list[Callable[[Clarification], None]] = []


class ErasureSubject:
    """How an erased person shows up in stored text. `terms` match as case-insensitive
    substrings (their id, with and without dashes, email and alias values; whole words when
    shorter than SHORT_TERM); `name`, when it has two or more words, matches as whole words
    with any whitespace, underscores, dots or hyphens between them, or none — the forms file
    names and addresses give it (`Alice_Author_CV.pdf`, `alice.author`, `AliceAuthor`), an
    underscore ending a word as a space does (a one-word name is too common a word to
    redact from documents and is left alone)."""

    def __init__(self, *, terms: Iterable[str], name: str = "") -> None:
        self.terms = sorted({t for t in terms if t}, key=len, reverse=True)
        self.name = name
        # A term shorter than SHORT_TERM (an odd alias) is matched as a whole word only,
        # so that redacting it cannot eat into unrelated words.
        parts = [
            re.escape(t) if len(t) >= SHORT_TERM else rf"(?<!\w){re.escape(t)}(?!\w)"
            for t in self.terms
        ]
        words = name.split()
        self.name_word = ""
        if len(words) >= 2:
            joined = r"[\s_.\-]*".join(re.escape(w) for w in words)
            parts.append(rf"(?<![^\W_]){joined}(?![^\W_])")
            self.name_word = max(words, key=len)
        # Nothing to look for matches nothing (an empty pattern would match everywhere).
        self.pattern = re.compile("|".join(parts) or r"(?!)", re.IGNORECASE)

    @classmethod
    def of(cls, person: Person, aliases: Iterable[str]) -> "ErasureSubject":
        return cls(terms=[str(person.pk), person.pk.hex, person.email, *aliases], name=person.name)

    def q(self, *fields: str) -> Q:
        """Rows whose `fields` may mention the subject: the database narrows the search
        (JSON columns are matched in their stored, escaped form too), `pattern` decides."""
        needles = {*self.terms, self.name_word} - {""}
        needles |= {json.dumps(n)[1:-1] for n in needles}
        q = Q(pk__in=[])
        for field in fields:
            for needle in needles:
                q |= Q(**{f"{field}__icontains": needle})
        return q

    def text(self, value: str) -> str:
        return self.pattern.sub(ERASED, value)

    def mask(self, value: str) -> str:
        """Same length: each match becomes a bar of redaction characters."""
        return self.pattern.sub(lambda m: REDACTION_BAR * len(m.group()), value)


def scrub(value: Any, subject: ErasureSubject) -> Any:
    """A JSON value with every mention of the subject (in keys and strings) "erased"."""
    if isinstance(value, dict):
        return {scrub(k, subject): scrub(v, subject) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, subject) for v in value]
    if isinstance(value, str):
        return subject.text(value)
    return value


def scrub_rows(qs: QuerySet[Any], fields: tuple[str, ...], subject: ErasureSubject) -> int:
    """Rewrite the mentions of the subject in `fields` of every row of `qs`; returns how
    many rows changed."""
    changed = 0
    for row in qs.filter(subject.q(*fields)).values("pk", *fields):
        new = {f: scrub(row[f], subject) for f in fields}
        new = {f: v for f, v in new.items() if v != row[f]}
        if new:
            qs.model._base_manager.filter(pk=row["pk"]).update(**new)
            changed += 1
    return changed


def audit_detail_rewrite(pk: Any, before: Any, after: Any) -> bool:
    """An erasure's rewrite of an audit event's detail: the new detail, and the salt of
    the old one's commitment forgotten (the hash chain keeps the commitment, so every
    link still checks; without the salt nothing can be tested against it). Unchanged:
    nothing written. Returns whether it changed."""
    if after == before:
        return False
    AuditEvent.objects.filter(pk=pk).update(detail=after, salt="")
    return True


def audit_details_scrub(qs: QuerySet[AuditEvent], subject: ErasureSubject) -> int:
    """`scrub_rows` of audit events' details, each rewritten by `audit_detail_rewrite`;
    returns how many changed."""
    changed = 0
    for pk, detail in qs.filter(subject.q("detail")).values_list("pk", "detail"):
        changed += audit_detail_rewrite(pk, detail, scrub(detail, subject))
    return changed


@transaction.atomic
def clarification_reask(
    *, clarification: Clarification, ranking: list[Person], actor: Person
) -> Job:
    """Re-enqueue delivery for a new candidate list: the current routing job ends, open
    card nonces are revoked (delivery's REASK_HOOKS), an expired or dead-lettered
    clarification opens again. The
    job cluster is woken once the re-ask commits (not at the next sweep); a refused
    re-ask writes nothing and wakes nothing."""
    # Its routing jobs first, then the clarification: the order leasing and reaping lock
    # them in (job, then its clarification in the on_lease / on_dead hooks), so a re-ask
    # racing a lease waits instead of deadlocking.
    routing = routing_jobs(clarification, active=True)
    held = list(routing.select_for_update().values_list("pk", flat=True))
    clar = Clarification.objects.select_for_update().get(pk=clarification.pk)
    if clar.state == State.ANSWERED:
        raise Conflict("An answered clarification is not asked again.")
    for person in ranking:
        if person.tenant_id != clar.tenant_id:
            raise NotFound("No such person in this tenant.")
    routing.filter(pk__in=held).update(
        status=JobStatus.DONE,
        lease_token=None,
        lease_expires_at=None,
        last_error="superseded by a re-ask",
    )
    for hook in REASK_HOOKS:
        hook(clar)
    ids = [str(p.pk) for p in ranking]
    previous_state = clar.state
    if clar.state in (State.EXPIRED, State.DEAD_LETTERED):
        clarification_transition(clar, State.OPEN, actor=actor, reason="reasked")
    clar.asked = ids
    clar.save(update_fields=["asked", "state", "updated_at"])
    audit_event_append(
        tenant=clar.tenant,
        clarification=clar,
        type="reasked",
        detail={"by": str(actor.pk), "ranking": ids, "from": previous_state, "to": clar.state},
    )
    return clarification_route(clar)


def people_of(tenant: Tenant, ids: list[str]) -> list[Person]:
    """The tenant's (not erased) people with these ids, in that order; Person.DoesNotExist
    if any is not one."""
    found = {
        str(p.pk): p
        for p in Person.objects.filter(tenant=tenant, pk__in=ids, erased_at__isnull=True)
    }
    if set(found) != set(ids):
        raise Person.DoesNotExist
    return [found[pid] for pid in ids]


def _steward(steward: Person) -> AnswerCaller:
    return AnswerCaller.of_person(steward, rights=Rights.STEWARD)


def _override_reason(clar: Clarification, steward: Person, reason: str) -> None:
    if reason:
        audit_event_append(
            tenant=clar.tenant,
            clarification=clar,
            type="override_reason",
            detail={"by": str(steward.pk), "reason": reason},
        )


@transaction.atomic
def clarification_override(
    *,
    clarification: Clarification,
    steward: Person,
    answer_index: int | None = None,
    interval: Interval | None = None,
    reason: str = "",
    channel: str,
    rights: str = Rights.STEWARD,
) -> Outcome:
    """A steward's override (CONTRACT §3.2 `stewardOverride`) naming a candidate or an
    interval, answered with `rights` (a person answering for themself: their role), and
    the reason given for it (an `override_reason` event; an interval's source text too):
    the binding and its reason commit together or not at all."""
    custom = None
    if interval is not None:
        custom = {"validFrom": interval[0], "validTo": interval[1], "sourceText": reason or None}
    outcome = clarification_answer(
        caller=AnswerCaller.of_person(steward, rights=rights),
        clarification_id=clarification.pk,
        answer=AnswerInput(
            answer_index=answer_index,
            answer_custom=custom,
            steward_override=True,
            channel=channel,
        ),
    )
    _override_reason(clarification, steward, reason)
    return outcome


def open_disputes(clar: Clarification) -> list[ResponseRecord]:
    """The post-binding disagreements no steward has resolved yet (oldest first): what
    keeps an answered clarification in Needs attention. Empty unless answered."""
    if clar.state != State.ANSWERED:
        return []
    return unresolved_post_binding_conflicts(list(clar.responses.order_by("seq")))


def bound_answer(clar: Clarification, channel: str) -> AnswerInput:
    """The answer naming the bound interval, as a steward's upholding override sends it:
    the candidate whose interval it is, or the interval itself."""
    version = ClarificationBinding.objects.select_related("node_version").get(clarification=clar)
    interval = (version.node_version.valid_from, version.node_version.valid_to)
    for index, candidate in enumerate(clar.candidates):
        if (candidate.get("validFrom"), candidate.get("validTo")) == interval:
            return AnswerInput(answer_index=index, steward_override=True, channel=channel)
    custom = {"validFrom": interval[0], "validTo": interval[1]}
    return AnswerInput(answer_custom=custom, steward_override=True, channel=channel)


@transaction.atomic
def clarification_uphold(
    *,
    clarification: Clarification,
    steward: Person,
    disputes_through: str,
    reason: str = "",
    channel: str = "admin",
) -> int:
    """Resolve the post-binding disagreements a steward was shown by upholding the bound
    answer: the explicit steward override naming the bound interval (a `steward_override`
    response and a `post_binding_conflict_resolved` event; the binding stands) and its
    reason. `disputes_through` is the `seq` of the latest disagreement the steward saw: if
    none is open (`NothingToUphold`) or another arrived meanwhile (`DisputesChanged`),
    nothing is written. Returns how many disagreements were resolved."""
    # Locked from the check to the answer (the answer locks it again, then its target: the
    # order every writer takes them in).
    locked = Clarification.objects.select_for_update().get(pk=clarification.pk)
    disputes = open_disputes(locked)
    if not disputes:
        raise NothingToUphold()
    if str(disputes[-1].seq) != disputes_through.strip():
        raise DisputesChanged()
    clarification_answer(
        caller=_steward(steward),
        clarification_id=locked.pk,
        answer=bound_answer(locked, channel),
    )
    _override_reason(clarification, steward, reason)
    return len(disputes)


def attestation_confirm(
    *, clarification: Clarification, steward: Person, response_id: str, channel: str = "admin"
) -> Outcome:
    """A steward confirms an attestation: the attested answer, given again with steward
    rights (it counts toward the quorum like any binding-capable answer).
    ResponseRecord.DoesNotExist unless `response_id` is an attestation of this
    clarification."""
    record = ResponseRecord.objects.get(
        clarification=clarification, pk=response_id, binding_status=BindingStatus.ATTESTATION
    )
    custom = None
    if record.answer_index is None:
        custom = {"validFrom": record.interval_from, "validTo": record.interval_to}
    return clarification_answer(
        caller=_steward(steward),
        clarification_id=clarification.pk,
        answer=AnswerInput(answer_index=record.answer_index, answer_custom=custom, channel=channel),
    )


POLICY_FIELDS = (
    "severity_elevate",
    "quorum_enabled",
    "critical_required_confirmations",
    "required_roles",
    "allow_steward_override",
    "channel_order",
    "reminder_after_hours",
)


@transaction.atomic
def clarify_policy_update(*, tenant: Tenant, actor: Person, **changes: Any) -> ClarifyPolicy:
    """Change the tenant's clarify policy (only clarifications opened afterwards use it)."""
    error = reminder_errors(changes.get("reminder_after_hours"))
    if error is not None:  # before anything is written
        raise InvalidInput(error, field="reminderAfterHours")
    policy, _ = ClarifyPolicy.objects.select_for_update().get_or_create(tenant=tenant)
    before = {f: getattr(policy, f) for f in POLICY_FIELDS}
    for name, value in changes.items():
        if name not in POLICY_FIELDS:
            raise TypeError(f"unknown policy field {name}")
        setattr(policy, name, value)
    policy.save()
    after = {f: getattr(policy, f) for f in POLICY_FIELDS}
    audit_event_append(
        tenant=tenant,
        type="policy_changed",
        detail={"by": str(actor.pk), "before": before, "after": after},
    )
    return policy


def attribution_erase(*, tenant: Tenant, person: Person, by: str | None, via: str) -> int:
    """`erase_person_attribution` without its tenant-level request event (shared with
    `privacy.executor.gdpr_erase`, which records its own)."""
    pid = str(person.pk)
    only_id = ErasureSubject(terms=[pid])
    # Every audit detail of the tenant naming the person: their clarifications', other
    # clarifications' (a dropped tap, a re-ask they made) and tenant-level events (a policy
    # change they made). Audit events are append-only, so reading them unlocked is safe.
    hits = list(
        AuditEvent.objects.filter(tenant=tenant)
        .filter(only_id.q("detail"))
        .values_list("pk", "clarification_id", "detail")
    )
    touched = {clar_id for _, clar_id, _ in hits if clar_id is not None}
    touched |= set(
        ResponseRecord.objects.filter(
            clarification__tenant=tenant, responder=person.pk
        ).values_list("clarification_id", flat=True)
    )
    touched |= set(
        Clarification.objects.filter(tenant=tenant, asked__icontains=pid).values_list(
            "pk", flat=True
        )
    )
    roles: dict[uuid.UUID, list[str]] = {}
    clarifications = list(
        Clarification.objects.select_for_update().filter(pk__in=touched).order_by("pk")
    )
    for clar in clarifications:
        if pid in clar.asked:
            clar.asked = [str(NIL) if a == pid else a for a in clar.asked]
            clar.save(update_fields=["asked", "updated_at"])
        theirs = ResponseRecord.objects.filter(clarification=clar, responder=person.pk)
        roles[clar.pk] = list(theirs.values_list("rights_at_answer_time", flat=True))
        theirs.update(responder=NIL, message_ref=None, channel=ERASED)
    for pk, _, detail in hits:
        audit_detail_rewrite(pk, detail, scrub(detail, only_id))
    for clar in clarifications:
        audit_event_append(
            tenant=tenant,
            clarification=clar,
            type="attribution_erased",
            detail={
                "responsesErased": len(roles[clar.pk]),
                "rolesAtAnswerTime": sorted(set(roles[clar.pk])),
                "by": by,
                "via": via,
            },
        )
    return len(clarifications)


def erasure_actor_id(actor: Person | None, person: Person) -> str | None:
    """Who asked for an erasure, as recorded (never the erased person's own id)."""
    if actor is None:
        return None
    return ERASED if actor.pk == person.pk else str(actor.pk)


@transaction.atomic
def erase_person_attribution(
    *, tenant: Tenant, person: Person, actor: Person | None = None, via: str = "cli"
) -> int:
    """Tombstone a person's attribution on every clarification of the tenant: asked
    entries and responder ids become the nil UUID, message refs are dropped, the channel
    becomes "erased", the person's id is scrubbed from every audit detail of the tenant
    (other clarifications' and tenant-level events included), and each clarification that
    changed gets an `attribution_erased` event (`by`: the steward who asked, `via`: admin
    or cli). Answer values, response times, rights at answer time (the role-level
    confirmation marker), binding statuses, quorum state and the corrected fact version
    survive. Every request, even one that finds nothing left to erase, is audited as a
    tenant-level `erasure_requested` event that does not name the person. Returns how many
    clarifications changed."""
    by = erasure_actor_id(actor, person)
    changed = attribution_erase(tenant=tenant, person=person, by=by, via=via)
    audit_event_append(
        tenant=tenant,
        type="erasure_requested",
        detail={"scope": "attribution", "by": by, "via": via, "clarifications": changed},
    )
    return changed
