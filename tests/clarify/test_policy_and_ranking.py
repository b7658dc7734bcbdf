"""Severity and quorum policy, pinning, the routing job, the capability flag, ranking."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from clarify.models import Clarification
from clarify.policy import EffectivePolicy, job_priority, policy_for, quorum_for, severity_for
from clarify.ranking import rank_candidates
from graph.models import Edge, Node
from jobs.models import Job
from jobs.services import job_enqueue
from tenancy.models import Person

from .conftest import C0, versions_of

SEVERITIES = ["low", "normal", "high", "critical"]

# ---------------------------------------------------------------------------------------
# severity_for


@pytest.mark.parametrize("hint", SEVERITIES)
def test_severity_is_the_hint_without_elevation(hint):
    assert severity_for(EffectivePolicy(), "relative_date", hint) == hint


def test_severity_hint_defaults_to_normal():
    assert severity_for(EffectivePolicy(), "undated", None) == "normal"


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        (None, "high"),
        ("low", "high"),
        ("normal", "high"),
        ("high", "high"),
        ("critical", "critical"),
    ],
)
def test_elevation_only_raises(hint, expected):
    policy = EffectivePolicy(severity_elevate={"conflicting_dates": "high"})
    assert severity_for(policy, "conflicting_dates", hint) == expected
    # Other kinds are untouched.
    assert severity_for(policy, "relative_date", hint) == (hint or "normal")


@pytest.mark.parametrize("hint", SEVERITIES)
def test_a_low_elevation_never_lowers(hint):
    policy = EffectivePolicy(severity_elevate={"undated": "low"})
    assert severity_for(policy, "undated", hint) == hint


def test_tenant_elevation_applies_on_submission(submit, tenant_policy):
    tenant_policy(severity_elevate={"conflicting_dates": "critical", "bogus": "high"})
    s = submit(kind="conflicting_dates")
    assert s.body["clarifications"][0]["severity"] == "critical"
    assert s.clar.quorum_policy["requiredConfirmations"] == 2
    t = submit(kind="undated", external_id="contracts/other.docx", severity_hint="low")
    assert t.clar.severity == "low"


def test_environment_elevation_is_the_default_and_tenant_overrides_it(
    submit, settings, tenant_policy
):
    settings.CLARIFY = {**settings.CLARIFY, "SEVERITY_ELEVATE": {"undated": "high"}}
    assert submit(kind="undated").clar.severity == "high"
    tenant_policy(severity_elevate={})
    assert submit(kind="undated", external_id="contracts/other.docx").clar.severity == "normal"


# ---------------------------------------------------------------------------------------
# quorum_for


@pytest.mark.parametrize("severity", ["low", "normal", "high"])
def test_quorum_not_required_below_critical(severity):
    pinned, state = quorum_for(EffectivePolicy(), severity)
    assert pinned == {
        "requiredConfirmations": 1,
        "requiredRoles": ["editor"],
        "allowStewardOverride": True,
    }
    assert state == "not_required"


def test_quorum_required_for_critical_when_enabled():
    pinned, state = quorum_for(EffectivePolicy(), "critical")
    assert pinned["requiredConfirmations"] == 2
    assert state == "pending"
    pinned, state = quorum_for(EffectivePolicy(critical_required_confirmations=3), "critical")
    assert (pinned["requiredConfirmations"], state) == (3, "pending")


def test_quorum_disabled_or_one_confirmation_is_not_required():
    pinned, state = quorum_for(EffectivePolicy(quorum_enabled=False), "critical")
    assert (pinned["requiredConfirmations"], state) == (1, "not_required")
    pinned, state = quorum_for(EffectivePolicy(critical_required_confirmations=1), "critical")
    assert (pinned["requiredConfirmations"], state) == (1, "not_required")


def test_quorum_policy_carries_roles_and_override_permission():
    policy = EffectivePolicy(required_roles=["steward"], allow_steward_override=False)
    pinned, _ = quorum_for(policy, "normal")
    assert pinned == {
        "requiredConfirmations": 1,
        "requiredRoles": ["steward"],
        "allowStewardOverride": False,
    }


def test_policy_for_overlays_tenant_fields_on_environment(workspace, settings, tenant_policy):
    settings.CLARIFY = {
        **settings.CLARIFY,
        "QUORUM_CRITICAL_REQUIRED_CONFIRMATIONS": 4,
        "QUORUM_ALLOW_STEWARD_OVERRIDE": False,
    }
    assert policy_for(workspace) == EffectivePolicy(
        critical_required_confirmations=4,
        allow_steward_override=False,
        channel_order=list(settings.CLARIFY_CHANNELS),
    )
    tenant_policy(allow_steward_override=True, required_roles=["nobody"])
    policy = policy_for(workspace)
    assert policy.critical_required_confirmations == 4
    assert policy.allow_steward_override is True
    assert policy.required_roles == ["editor"]  # invalid roles fall back to editor


def test_tenant_quorum_disabled_binds_critical_on_one_answer(
    submit, clients, answer, tenant_policy
):
    tenant_policy(quorum_enabled=False)
    s = submit(severity_hint="critical")
    assert (s.clar.severity, s.clar.quorum_state) == ("critical", "not_required")
    resp = answer(clients.alice, s.clar_id, answerIndex=1)
    assert resp.status_code == 200
    assert versions_of(s.node_id)[-1].evidence_class == "human_clarification"


def test_required_role_steward_makes_editor_answers_attestations(
    submit, clients, answer, tenant_policy
):
    tenant_policy(required_roles=["steward"])
    s = submit()
    resp = answer(clients.alice, s.clar_id, answerIndex=1)
    assert resp.json() == {"outcome": "attestation", "state": "attested"}
    resp = answer(clients.sam, s.clar_id, answerIndex=1)
    assert resp.status_code == 200
    assert resp.json()["outcome"] == "bound"


def test_policy_is_pinned_at_creation(submit, clients, answer, tenant_policy, settings):
    s = submit(severity_hint="critical")
    pinned = {"requiredConfirmations": 2, "requiredRoles": ["editor"], "allowStewardOverride": True}
    assert s.clar.quorum_policy == pinned

    tenant_policy(
        quorum_enabled=True,
        critical_required_confirmations=3,
        required_roles=["steward"],
        allow_steward_override=False,
    )
    settings.CLARIFY = {**settings.CLARIFY, "QUORUM_CRITICAL_REQUIRED_CONFIRMATIONS": 5}

    detail = clients.alice.get(f"/v1/clarifications/{s.clar_id}").json()
    assert detail["quorumPolicy"] == pinned
    assert detail["quorumState"] == "pending"
    first = answer(clients.alice, s.clar_id, answerIndex=1)
    assert first.json()["quorumRemaining"] == 1  # still 2 required, editors still count
    assert answer(clients.bob, s.clar_id, answerIndex=1).status_code == 200
    # A clarification opened afterwards gets the new policy.
    t = submit(severity_hint="critical", external_id="contracts/other.docx")
    assert t.clar.quorum_policy == {
        "requiredConfirmations": 3,
        "requiredRoles": ["steward"],
        "allowStewardOverride": False,
    }
    # And the override permission is pinned too.
    u_pinned = submit(external_id="contracts/third.docx")
    assert u_pinned.clar.quorum_policy["allowStewardOverride"] is False
    resp = answer(clients.sam, u_pinned.clar_id, answerIndex=1, stewardOverride=True)
    assert resp.status_code == 403


# ---------------------------------------------------------------------------------------
# The clarify:temporal routing job


@pytest.mark.parametrize(
    ("hint", "priority"), [("critical", 0), ("high", 1), ("normal", 2), (None, 2)]
)
def test_routing_job_row(submit, people, hint, priority):
    s = submit(severity_hint=hint, links=[("AUTHORED_BY", "alice"), ("CC", "bob")])
    ranking = [str(people["alice"].pk), str(people["bob"].pk)]
    assert s.clar.asked == ranking
    [job] = Job.objects.filter(kind="clarify:temporal")
    assert job.payload == {"v": 1, "clarificationId": s.clar_id, "ranking": ranking}
    assert job.priority == priority
    assert job.max_attempts == len(ranking) + 1
    assert (job.status, job.audience, job.attempts) == ("pending", "clarify", 0)
    assert job.subject == s.clar_id
    assert job.tenant_id == s.clar.tenant_id


def test_routing_job_with_empty_ranking_is_the_steward_attempt_only(submit):
    s = submit(links=[])
    assert s.clar.asked == []
    job = Job.objects.get(kind="clarify:temporal")
    assert (job.payload["ranking"], job.max_attempts) == ([], 1)


def test_low_severity_never_enqueues(submit):
    s = submit(severity_hint="low")
    assert s.body["clarifications"][0]["severity"] == "low"
    assert s.clar.state == "open"
    assert not Job.objects.exists()
    assert versions_of(s.node_id)[0].pending is True


def test_job_priority_table():
    assert [job_priority(s) for s in ["critical", "high", "normal", "low"]] == [0, 1, 2, 2]


def test_detector_confidence_gates_creation(submit):
    s = submit(detector_confidence=0.3)
    assert s.body["clarifications"] == []
    assert not Clarification.objects.exists()
    assert not Job.objects.exists()
    [version] = versions_of(s.node_id)
    assert (version.valid_from, version.valid_to) == C0  # best guess still applied ...
    assert version.confidence == 0.45  # ... at reduced confidence ...
    assert version.pending is False  # ... but not pending
    assert version.provenance["clarification"] is None


# ---------------------------------------------------------------------------------------
# The capability flag on ingest jobs


def test_ingest_job_payload_forces_clarify_option(workspace):
    job = job_enqueue(
        tenant=workspace,
        kind="ingest:document",
        payload={"options": {"clarify": False, "ocr": True}, "file": "x.txt"},
    )
    job.refresh_from_db()
    assert job.payload == {"options": {"clarify": True, "ocr": True}, "file": "x.txt"}
    bare = job_enqueue(tenant=workspace, kind="ingest:document", payload={})
    bare.refresh_from_db()
    assert bare.payload == {"options": {"clarify": True}}


def test_ingest_job_payload_without_clarify_enabled(workspace, settings):
    settings.CLARIFY = {**settings.CLARIFY, "ENABLED": False}
    job = job_enqueue(
        tenant=workspace, kind="ingest:document", payload={"options": {"clarify": True}}
    )
    job.refresh_from_db()
    assert job.payload["options"] == {"clarify": False}


def test_non_ingest_jobs_get_no_capability_flag(workspace):
    job = job_enqueue(tenant=workspace, kind="clarify:temporal", payload={"v": 1})
    job.refresh_from_db()
    assert job.payload == {"v": 1}


# ---------------------------------------------------------------------------------------
# rank_candidates

RANKING_LINKS = [
    ("OWNED_BY", "olga"),  # rank 2 ...
    ("MENTIONS", "vera", "in"),  # rank 1, person → fact
    ("CC", "bob"),  # rank 1, after vera
    ("AUTHORED_BY", "ghost@elsewhere.test"),  # unresolved PERSON: skipped
    ("SENT_BY", "sam"),  # the steward: never ranked
    ("RELATED_TO", "alice"),  # not an authority edge
    ("LAST_MODIFIED_BY", "alice", "in"),  # rank 0, person → fact
    ("NAMES", "olga"),  # ... olga improves to rank 1, after bob
    ("TO", "alice"),  # alice already rank 0
]


def test_rank_candidates_buckets_and_order(submit, people, settings):
    settings.CLARIFY = {**settings.CLARIFY, "MAX_CANDIDATES": 10}
    s = submit(links=RANKING_LINKS)
    expected = [people[n].pk for n in ("alice", "vera", "bob", "olga")]
    assert s.clar.asked == [str(p) for p in expected]
    target = s.clar.target
    for cap in range(6):
        assert rank_candidates(target=target, max_candidates=cap) == expected[:cap]


def test_rank_candidates_default_cap_is_max_candidates(submit, people):
    s = submit(links=RANKING_LINKS)
    assert s.clar.asked == [str(people[n].pk) for n in ("alice", "vera", "bob")]
    assert Job.objects.get().max_attempts == 4


def test_rank_candidates_keeps_the_best_rank(submit, people):
    s = submit(links=[("OWNED_BY", "bob"), ("OWNED_BY", "olga"), ("CC", "olga", "in")])
    assert s.clar.asked == [str(people["olga"].pk), str(people["bob"].pk)]


def test_rank_candidates_skips_erased_people(submit, people):
    s = submit(links=RANKING_LINKS)
    Person.objects.filter(pk=people["vera"].pk).update(erased_at=timezone.now())
    ranked = rank_candidates(target=s.clar.target, max_candidates=10)
    assert ranked == [people[n].pk for n in ("alice", "bob", "olga")]


def test_rank_candidates_query_count_is_independent_of_degree(
    workspace, many_editors, django_assert_num_queries
):
    racers = many_editors(60)
    person_nodes = [
        Node.objects.create(tenant=workspace, key=f"person:{p.pk}", person=p) for p in racers
    ]
    types = ["OWNED_BY", "CC", "AUTHORED_BY", "MENTIONS", "SENT_BY", "TO"]

    def fan(key: str, degree: int) -> Node:
        target = Node.objects.create(tenant=workspace, key=key)
        for i, person_node in enumerate(person_nodes[:degree]):
            ends = (target, person_node) if i % 2 else (person_node, target)
            Edge.objects.create(
                tenant=workspace,
                type=types[i % len(types)],
                from_node=ends[0],
                to_node=ends[1],
                created_tx=i,
            )
        return target

    small, big = fan("small", 3), fan("big", 60)
    with CaptureQueriesContext(connection) as ctx:
        small_ranked = rank_candidates(target=small, max_candidates=3)
    assert small_ranked == [racers[2].pk, racers[1].pk, racers[0].pk]
    with django_assert_num_queries(len(ctx.captured_queries)):
        big_ranked = rank_candidates(target=big, max_candidates=3)
    assert len(ctx.captured_queries) == 1
    # AUTHORED_BY/SENT_BY (rank 0) come at i = 2, 4, 8, 10, … in first-seen order.
    assert big_ranked == [racers[2].pk, racers[4].pk, racers[8].pk]
