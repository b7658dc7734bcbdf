"""SCIM 2.0 resources of a tenant (RFC 7643): what this service publishes about itself
(ServiceProviderConfig, ResourceTypes, Schemas) and a person or group as a SCIM resource.
The payload models, their validation, PATCH and `attributes` handling are scim2-models'."""

from typing import Any

from django.db.models import QuerySet
from scim2_models import (
    Context,
    EnterpriseUser,
    Group,
    ResponseParameters,
    Schema,
    ScimPolicy,
    User,
)

from tenancy.models import AliasKind, Person, TenantGroup

from .services import GroupSpec, PersonSpec

ScimUser = User[EnterpriseUser]
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
LIST_RESPONSE = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
MAX_RESULTS = 200

# Entra ID's known departures from RFC 7644 (a `remove` naming its target in `value`; a
# `replace` on `emails[type eq "work"].value` when no such entry exists yet) are accepted.
POLICY = ScimPolicy(
    unknown=ScimPolicy.Unknown.ignore,
    remove_value_as_filter=ScimPolicy.RemoveValue.apply,
    unmatched_path_filter=ScimPolicy.UnmatchedPathFilter.create,
)

# The attributes this service stores; the published schemas hold only these.
_USER_ATTRIBUTES = {
    "userName": None,
    "displayName": None,
    "active": None,
    "emails": {"value"},
    "roles": {"value"},
    "groups": {"value", "$ref", "display"},
}
_GROUP_ATTRIBUTES = {"displayName": None, "members": {"value", "$ref", "type"}}


def _published(model: Any, keep: dict[str, set[str] | None]) -> dict[str, Any]:
    schema: Schema = model.to_schema()
    schema.attributes = [a for a in schema.attributes or [] if a.name in keep]
    for attr in schema.attributes:
        subs = keep[attr.name or ""]
        if subs is not None:
            attr.sub_attributes = [s for s in attr.sub_attributes or [] if s.name in subs]
    doc = schema.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    for attr in doc["attributes"]:
        if attr["name"] == "emails":
            attr["required"] = True  # a person needs an email (or an email as userName)
        for sub in attr.get("subAttributes", []):
            if attr["name"] == "emails" and sub["name"] == "value":
                sub["required"] = True
            if attr["name"] == "roles" and sub["name"] == "value":
                sub["canonicalValues"] = ["viewer", "editor", "steward"]
            if attr["name"] == "members" and sub["name"] == "$ref":
                sub["referenceTypes"] = ["User"]
            if attr["name"] == "members" and sub["name"] == "type":
                sub["canonicalValues"] = ["User"]
    return doc


def schemas(base: str) -> list[dict[str, Any]]:
    out = []
    for model, keep, name in (
        (User, _USER_ATTRIBUTES, "User"),
        (Group, _GROUP_ATTRIBUTES, "Group"),
    ):
        doc = _published(model, keep)
        doc["meta"] = {"resourceType": "Schema", "location": f"{base}/Schemas/{doc['id']}"}
        doc["name"] = name
        out.append(doc)
    return out


def resource_types(base: str) -> list[dict[str, Any]]:
    return [
        {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
            "id": name,
            "name": name,
            "endpoint": f"/{name}s",
            "description": description,
            "schema": schema,
            "meta": {"resourceType": "ResourceType", "location": f"{base}/ResourceTypes/{name}"},
        }
        for name, schema, description in (
            ("User", USER_SCHEMA, "A person of the tenant"),
            ("Group", GROUP_SCHEMA, "A group of the tenant (ACL principal group:NAME)"),
        )
    ]


def service_provider_config(base: str, docs: str) -> dict[str, Any]:
    return {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
        "documentationUri": docs,
        "patch": {"supported": True},
        "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": True, "maxResults": MAX_RESULTS},
        "changePassword": {"supported": False},
        "sort": {"supported": False},
        "etag": {"supported": False},
        "authenticationSchemes": [
            {
                "type": "oauthbearertoken",
                "name": "Bearer token",
                "description": "A `scim` service token: telha api_key create --audience scim",
                "primary": True,
            }
        ],
        "meta": {
            "resourceType": "ServiceProviderConfig",
            "location": f"{base}/ServiceProviderConfig",
        },
    }


def _meta(kind: str, obj: Any, base: str) -> dict[str, Any]:
    meta = {"resourceType": kind, "location": f"{base}/{kind}s/{obj.pk}"}
    if obj.created_at is not None:
        meta["created"] = obj.created_at.isoformat()
    if obj.updated_at is not None:
        meta["lastModified"] = obj.updated_at.isoformat()
    return meta


def people_for_scim(qs: QuerySet[Person]) -> QuerySet[Person]:
    return qs.select_related("user", "provisioned").prefetch_related("aliases", "groups")


def user_doc(person: Person, base: str) -> dict[str, Any]:
    aliases = {a.kind: a.value for a in person.aliases.all()}
    doc: dict[str, Any] = {
        "schemas": [USER_SCHEMA],
        "id": str(person.pk),
        # The `upn` alias (unique in the tenant); a person loaded before it existed
        # without one is known by their email, which `scim_filters.user_name` matches too.
        "userName": aliases.get(AliasKind.UPN) or person.email,
        "displayName": person.name,
        "active": person.deactivated_at is None,
        "emails": [{"value": person.email}],
        "roles": [{"value": person.role}],
        "groups": [
            {"value": str(g.pk), "$ref": f"{base}/Groups/{g.pk}", "display": g.name}
            for g in person.groups.all()
        ],
        "meta": _meta("User", person, base),
    }
    if AliasKind.AAD_OID in aliases:
        doc["externalId"] = aliases[AliasKind.AAD_OID]
    provisioned = getattr(person, "provisioned", None)
    for attr in provisioned.unset if provisioned is not None else []:
        doc.pop(attr, None)  # the provider left it unset
    if not doc["groups"]:
        del doc["groups"]
    return doc


def group_doc(group: TenantGroup, base: str) -> dict[str, Any]:
    members = group.members.filter(erased_at__isnull=True, deleted_by_provider=False)
    doc: dict[str, Any] = {
        "schemas": [GROUP_SCHEMA],
        "id": str(group.pk),
        "displayName": group.name,
        "members": [
            {"value": str(p.pk), "$ref": f"{base}/Users/{p.pk}", "type": "User"}
            for p in members.order_by("created_at", "pk")
        ],
        "meta": _meta("Group", group, base),
    }
    if group.external_id:
        doc["externalId"] = group.external_id
    if not doc["members"]:
        del doc["members"]
    return doc


def rendered(
    model: Any, doc: dict[str, Any], params: ResponseParameters[Any] | None
) -> dict[str, Any]:
    """A resource as sent: checked by its model, `attributes`/`excludedAttributes` applied."""
    obj = model.model_validate(doc, scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    ctx = Context.RESOURCE_QUERY_RESPONSE
    sent: dict[str, Any] = obj.model_dump(scim_ctx=ctx, response_parameters=params)
    return sent


def person_spec(user: Any) -> PersonSpec:
    """A parsed SCIM User as what the person-provisioning service takes."""
    emails = user.emails or []
    email = next((e for e in emails if e.primary), None) or next(
        (e for e in emails if str(e.type or "") == "work"), None
    )
    email = email or (emails[0] if emails else None)
    name = user.display_name
    if not name and user.name is not None:
        parts = [user.name.given_name, user.name.family_name]
        name = user.name.formatted or " ".join(p for p in parts if p)
    unset = [
        attr
        for attr, value in (("displayName", user.display_name), ("active", user.active))
        if value is None
    ] + ([] if user.roles else ["roles"])
    return PersonSpec(
        unset=unset,
        user_name=user.user_name or "",
        email=str(email.value) if email is not None and email.value else None,
        name=name or "",
        roles=[str(r.value) for r in user.roles or [] if r.value],
        external_id=user.external_id,
        active=user.active is not False,
    )


def group_spec(group: Any) -> GroupSpec:
    return GroupSpec(
        name=group.display_name or "",
        external_id=group.external_id or "",
        members=[str(m.value) for m in group.members or [] if m.value],
    )
