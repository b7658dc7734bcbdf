"""The bitemporal fact store: sources, their versions and spans, nodes, node versions, edges.

Valid and transaction times are µs BigIntegers (None = open end). Versions are
append-only: an update closes the current version's `tx_to` and inserts the next;
nothing is edited in place or deleted except by the GDPR erasure executor.
"""

import uuid

from django.db import models
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase

from tenancy.models import Person, Tenant


class EvidenceClass(models.TextChoices):
    """What supports a version (spec §5 evidence classes, CONTRACT §3.3)."""

    SYSTEM_EXTRACTION = "system_extraction"
    HUMAN_CLARIFICATION = "human_clarification"
    HUMAN_ATTESTATION = "human_attestation"
    QUORUM_CONFIRMATION = "quorum_confirmation"
    STEWARD_OVERRIDE = "steward_override"


class Source(models.Model):
    """A document of a source system. Its ACL lives in `acl` (the principals as given) and
    as django-guardian `view_source` permissions on the principals' users and groups.
    `restriction` is a label (e.g. "privileged"), distinct from the ACL."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="sources")
    system = models.CharField(max_length=100)
    external_id = models.CharField(max_length=500)
    title = models.CharField(max_length=500, blank=True)
    uri = models.CharField(max_length=2000, blank=True)
    restriction = models.CharField(max_length=100, null=True, blank=True)
    acl = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "system", "external_id"], name="source_unique_identity"
            )
        ]
        ordering = ["system", "external_id"]

    def __str__(self) -> str:
        return self.title or f"{self.system}:{self.external_id}"


class SourceUserObjectPermission(UserObjectPermissionBase):
    """Direct-FK guardian permission rows for users (fast ACL joins)."""

    content_object = models.ForeignKey(Source, on_delete=models.CASCADE)

    def __str__(self) -> str:
        return f"{self.user_id} may view {self.content_object_id}"


class SourceGroupObjectPermission(GroupObjectPermissionBase):
    """Direct-FK guardian permission rows for groups."""

    content_object = models.ForeignKey(Source, on_delete=models.CASCADE)

    def __str__(self) -> str:
        return f"group {self.group_id} may view {self.content_object_id}"


class SourceVersion(models.Model):
    """The canonical text of a source at a transaction time. Same content = same version."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="versions")
    tx = models.BigIntegerField()
    content_hash = models.CharField(max_length=64)
    text = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "tx"], name="sourceversion_unique_tx")
        ]
        indexes = [models.Index(fields=["source", "content_hash"])]
        ordering = ["source", "tx"]

    def __str__(self) -> str:
        return f"{self.source} @ {self.tx}"


class Span(models.Model):
    """A character range of a source version's canonical text."""

    source_version = models.ForeignKey(
        SourceVersion, on_delete=models.CASCADE, related_name="spans"
    )
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["source_version", "start", "end"], name="span_unique_range"
            ),
            models.CheckConstraint(
                condition=models.Q(end__gte=models.F("start")), name="span_order"
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.start}, {self.end})"

    @property
    def text(self) -> str:
        return self.source_version.text[self.start : self.end]


class Node(models.Model):
    """The logical identity of a fact or a person across versions.

    A fact node is identified by (tenant, source, key) and readable under its source's ACL.
    A PERSON node resolved to a known person is the tenant's one node for that person
    (sourceless, readable by the whole tenant). An unresolved PERSON node is keyed by its
    alias ("email:…"), tenant-wide, so it is never duplicated; its `origin` is the source
    that first named it, whose ACL governs reading it (its properties came from that
    document). When the person becomes known, that node is adopted as theirs — still under
    its origin's ACL, since its history holds what the document said."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="nodes")
    source = models.ForeignKey(
        Source, on_delete=models.CASCADE, null=True, blank=True, related_name="nodes"
    )
    key = models.CharField(max_length=500)
    person = models.ForeignKey(
        Person, on_delete=models.SET_NULL, null=True, blank=True, related_name="nodes"
    )
    origin = models.ForeignKey(
        Source,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="originated_nodes",
        help_text="For a sourceless node first named by a document: that document, whose "
        "ACL governs who may read the node.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "source", "key"],
                condition=models.Q(source__isnull=False),
                name="node_unique_source_key",
            ),
            models.UniqueConstraint(
                fields=["tenant", "key"],
                condition=models.Q(source__isnull=True),
                name="node_unique_tenant_key",
            ),
            models.UniqueConstraint(
                fields=["tenant", "person"],
                condition=models.Q(person__isnull=False),
                name="node_unique_person",
            ),
        ]

    def __str__(self) -> str:
        return self.key


class NodeVersion(models.Model):
    """One belief about a node, valid over [valid_from, valid_to) and recorded over
    [tx_from, tx_to). Exactly one version per node is current (tx_to is NULL)."""

    # No index of its own: the unique (node, seq) and (node, tx_from) indexes lead with it.
    node = models.ForeignKey(
        Node, on_delete=models.CASCADE, related_name="versions", db_index=False
    )
    seq = models.PositiveIntegerField()
    labels = models.JSONField(default=list)
    properties = models.JSONField(default=dict)
    search_text = models.TextField(blank=True)
    valid_from = models.BigIntegerField(null=True, blank=True)
    valid_to = models.BigIntegerField(null=True, blank=True)
    tx_from = models.BigIntegerField()
    tx_to = models.BigIntegerField(null=True, blank=True)
    confidence = models.FloatField(default=1.0)
    provenance = models.JSONField(default=dict)
    pending = models.BooleanField(default=False)
    evidence_class = models.CharField(
        max_length=24, choices=EvidenceClass.choices, default=EvidenceClass.SYSTEM_EXTRACTION
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["node"],
                condition=models.Q(tx_to__isnull=True),
                name="nodeversion_one_current",
            ),
            models.UniqueConstraint(fields=["node", "seq"], name="nodeversion_unique_seq"),
            # Also the as-of index: tx_from <= T ORDER BY tx_from DESC LIMIT 1.
            models.UniqueConstraint(fields=["node", "tx_from"], name="nodeversion_unique_tx_from"),
            models.CheckConstraint(
                condition=models.Q(tx_to__isnull=True) | models.Q(tx_to__gt=models.F("tx_from")),
                name="nodeversion_tx_order",
            ),
            models.CheckConstraint(
                condition=models.Q(valid_from__isnull=True)
                | models.Q(valid_to__isnull=True)
                | models.Q(valid_to__gt=models.F("valid_from")),
                name="nodeversion_valid_order",
            ),
        ]
        indexes = [
            models.Index(
                fields=["tx_from"],
                condition=models.Q(tx_to__isnull=True),
                name="nodeversion_current",
            ),
            # Ask in chat's period questions ("what starts / ends in 2031?").
            models.Index(
                fields=["valid_from"],
                condition=models.Q(tx_to__isnull=True),
                name="nodeversion_current_from",
            ),
            models.Index(
                fields=["valid_to"],
                condition=models.Q(tx_to__isnull=True),
                name="nodeversion_current_to",
            ),
        ]
        ordering = ["node", "seq"]

    def __str__(self) -> str:
        return f"{self.node_id} v{self.seq}"


class Edge(models.Model):
    """A typed, directed relation between two nodes (AUTHORED_BY, MENTIONS, OWNED_BY, …)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="edges")
    type = models.CharField(max_length=64)
    from_node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="out_edges")
    to_node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="in_edges")
    source_version = models.ForeignKey(
        SourceVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="edges"
    )
    created_tx = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["from_node", "to_node", "type"], name="edge_unique_triple"
            )
        ]
        indexes = [models.Index(fields=["to_node", "type"])]

    def __str__(self) -> str:
        return f"{self.from_node_id} -{self.type}-> {self.to_node_id}"
