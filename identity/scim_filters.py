"""SCIM filters (RFC 7644 §3.4.2.2) as Django queries. The grammar is scim2-models'
(`ScimFilter` parses and validates the expression against the resource model); this
module only walks the parsed tree it yields and says which column each attribute is."""

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.db.models import Exists, OuterRef, Q
from scim2_models import InvalidFilterException
from scim2_models.path import (
    AttrPath,
    CompareOperator,
    Comparison,
    FilterVisitor,
    LogicalExpr,
    LogicalOperator,
    Not,
    Present,
    ValuePath,
)

from tenancy.models import AliasKind, PersonAlias, normalise_alias

_LOOKUPS = {
    CompareOperator.eq: "iexact",
    CompareOperator.co: "icontains",
    CompareOperator.sw: "istartswith",
    CompareOperator.ew: "iendswith",
    CompareOperator.gt: "gt",
    CompareOperator.ge: "gte",
    CompareOperator.lt: "lt",
    CompareOperator.le: "lte",
}

# An attribute as a function of (lookup, value) -> Q; `pr` is lookup "isnull" value False.
Column = Callable[[str, Any], Q]


def field(name: str) -> Column:
    return lambda lookup, value: Q(**{f"{name}__{lookup}": value})


def moment(name: str) -> Column:
    """A dateTime column (`meta.created`): compared with an RFC 3339 string only — a
    number, a boolean or a string that is no date is `invalidFilter`."""

    def column(lookup: str, value: Any) -> Q:
        if lookup == "isnull":
            return Q(**{f"{name}__isnull": value})
        if not isinstance(value, str):
            raise InvalidFilterException(detail=f"{value!r} is not a dateTime")
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidFilterException(detail=f"{value!r} is not a dateTime") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        lookup = "exact" if lookup == "iexact" else lookup
        if lookup not in {"exact", "gt", "gte", "lt", "lte"}:
            raise InvalidFilterException(detail="a dateTime compares with eq, ne, gt, ge, lt, le")
        return Q(**{f"{name}__{lookup}": when})

    return column


def key(name: str, parse: Callable[[str], Any]) -> Column:
    """An id column: compared exactly; a value that is not an id matches nothing."""

    def column(lookup: str, value: Any) -> Q:
        if lookup == "isnull":
            return Q(**{f"{name}__isnull": value})
        if lookup != "iexact":
            raise InvalidFilterException(detail="ids compare with eq or ne only")
        try:
            return Q(**{name: parse(str(value))})
        except ValueError:
            return Q(pk__in=[])

    return column


def alias(kind: str) -> Column:
    def column(lookup: str, value: Any) -> Q:
        if lookup == "isnull":  # absent
            return ~Q(Exists(PersonAlias.objects.filter(person=OuterRef("pk"), kind=kind)))
        if lookup == "iexact" and isinstance(value, str):
            lookup, value = "exact", normalise_alias(kind, value)
        rows = PersonAlias.objects.filter(person=OuterRef("pk"), kind=kind)
        return Q(Exists(rows.filter(**{f"value__{lookup}": value})))

    return column


def user_name(lookup: str, value: Any) -> Q:
    """`userName`: the `upn` alias, else (a person without one) the email, as `user_doc`
    shows it. Every user has one; only this tenant's people are ever compared."""
    if lookup == "isnull":
        return Q(pk__in=[]) if value else Q()
    no_upn = alias(AliasKind.UPN)("isnull", True)
    return alias(AliasKind.UPN)(lookup, value) | (no_upn & field("email")(lookup, value))


def active(lookup: str, value: Any) -> Q:
    if lookup == "isnull":
        return Q()
    if lookup != "iexact" or not isinstance(value, bool):
        raise InvalidFilterException(detail="active compares with eq/ne true or false")
    return Q(deactivated_at__isnull=value)


USER_COLUMNS: dict[str, Column] = {
    "id": key("pk", uuid.UUID),
    "username": user_name,
    "externalid": alias(AliasKind.AAD_OID),
    "emails": field("email"),
    "emails.value": field("email"),
    "displayname": field("name"),
    "name.formatted": field("name"),
    "active": active,
    "roles": field("role"),
    "roles.value": field("role"),
    "meta.created": moment("created_at"),
    "meta.lastmodified": moment("updated_at"),
}

GROUP_COLUMNS: dict[str, Column] = {
    "id": key("pk", int),
    "displayname": field("name"),
    "externalid": field("external_id"),
    "members": key("members__pk", uuid.UUID),
    "members.value": key("members__pk", uuid.UUID),
    "meta.created": moment("created_at"),
    "meta.lastmodified": moment("updated_at"),
}


class FilterToQ(FilterVisitor[Q]):
    """A parsed SCIM filter as a `Q` over the model the columns describe. An attribute
    this service does not filter on is `invalidFilter` (400)."""

    def __init__(self, columns: dict[str, Column]) -> None:
        self.columns = columns

    def _column(self, path: AttrPath, prefix: str = "") -> Column:
        name = f"{prefix}{path.attr}" + (f".{path.sub_attr}" if path.sub_attr else "")
        column = self.columns.get(name.lower())
        if column is None:
            raise InvalidFilterException(detail=f"filtering on {name} is not supported")
        return column

    def _column_id(self, value: str) -> Q:
        """The resource with this id (none when it is not an id of this kind)."""
        return self.columns["id"]("iexact", value)

    def visit_comparison(self, node: Comparison) -> Q:
        return self._compare(node, "")

    def _compare(self, node: Comparison, prefix: str) -> Q:
        column = self._column(node.attr_path, prefix)
        if node.value is None and node.op not in (CompareOperator.eq, CompareOperator.ne):
            raise InvalidFilterException(detail="null compares with eq or ne only")
        if node.op == CompareOperator.ne:
            return ~column("iexact", node.value)
        value = str(node.value) if node.op in _STRING_OPS else node.value
        return column(_LOOKUPS[node.op], value)

    def visit_present(self, node: Present) -> Q:
        return ~self._column(node.attr_path)("isnull", True)

    def visit_not(self, node: Not) -> Q:
        return ~self.visit(node.expr)

    def visit_logical_expr(self, node: LogicalExpr) -> Q:
        terms = [self.visit(t) for t in node.terms]
        out = terms[0]
        for term in terms[1:]:
            out = out & term if node.op == LogicalOperator.and_ else out | term
        return out

    def visit_value_path(self, node: ValuePath) -> Q:
        # emails[value eq "x"]: the inner comparisons name sub-attributes of the outer one.
        inner = node.val_filter
        if isinstance(inner, Comparison):
            return self._compare(inner, f"{node.attr_path.attr}.")
        raise InvalidFilterException(detail="only one comparison inside [...] is supported")


_STRING_OPS = {CompareOperator.co, CompareOperator.sw, CompareOperator.ew}
