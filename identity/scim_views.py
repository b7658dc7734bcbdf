"""SCIM 2.0 endpoints at /scim/v2/ (CONTRACT §3.7), for the tenant of the calling `scim`
service token. Another tenant's resources are 404 and never match a filter. Errors are
SCIM error bodies (`urn:ietf:params:scim:api:messages:2.0:Error`) on these paths."""

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.db.models import Model, QuerySet
from django.http import Http404
from pydantic import ValidationError
from rest_framework import exceptions as drf_exceptions
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView, set_rollback
from scim2_models import (
    Context,
    Error,
    Group,
    InvalidFilterException,
    InvalidValueException,
    NotImplementedException,
    PatchOp,
    ResponseParameters,
    SCIMException,
    SearchRequest,
)

from common.errors import DomainError
from common.parsers import JSONParser
from tenancy.auth import ApiKeyAuthentication, IsScimService, caller_of
from tenancy.models import Person, TenantGroup

from . import scim
from .scim_filters import GROUP_COLUMNS, USER_COLUMNS, Column, FilterToQ
from .services import group_delete, group_provision, person_provision, person_remove

SCIM_MEDIA_TYPE = "application/scim+json"
# The largest startIndex served: past it the database could not take the offset (a
# PostgreSQL bigint); any real list ends long before.
MAX_START_INDEX = 2**31 - 1


class ScimRenderer(JSONRenderer):
    media_type = SCIM_MEDIA_TYPE


class ScimParser(JSONParser):
    media_type = SCIM_MEDIA_TYPE


def _error(status: int, detail: str, scim_type: str | None = None) -> Response:
    body = Error(status=status, detail=detail, scim_type=scim_type).model_dump()
    return Response(body, status=status, content_type=SCIM_MEDIA_TYPE)


_DRF_STATUS = {
    drf_exceptions.NotAuthenticated: 401,
    drf_exceptions.AuthenticationFailed: 401,
}


def scim_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Every refusal on /scim/v2/ as a SCIM error body; the transaction rolls back."""
    set_rollback()
    if isinstance(exc, SCIMException):
        return _error(exc.status, exc.detail, exc.scim_type)
    if isinstance(exc, ValidationError):
        err = Error.from_validation_errors(exc)[0]
        return _error(int(err.status or 400), err.detail or "invalid", err.scim_type)
    if isinstance(exc, DomainError):
        status, scim_type = {404: (404, None), 409: (409, "uniqueness")}.get(
            exc.status_code, (400, "invalidValue")
        )
        return _error(status, str(exc.detail), scim_type)
    if isinstance(exc, Http404):
        return _error(404, "No such resource.")
    if isinstance(exc, IntegrityError):  # a concurrent request created the same name first
        return _error(409, "A resource with this name already exists.", "uniqueness")
    if isinstance(exc, drf_exceptions.APIException):
        status = next((s for c, s in _DRF_STATUS.items() if isinstance(exc, c)), exc.status_code)
        scim_type = "invalidSyntax" if isinstance(exc, drf_exceptions.ParseError) else None
        response = _error(status, str(exc.detail), scim_type)
        if status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="telha"'
        return response
    return None


class ScimView(APIView):
    # Not part of the /v1/ OpenAPI document: SCIM describes itself (ServiceProviderConfig,
    # ResourceTypes, Schemas).
    schema = None
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsScimService]
    renderer_classes = [ScimRenderer, JSONRenderer]
    parser_classes = [ScimParser, JSONParser]

    def get_exception_handler(self) -> Any:
        return scim_exception_handler

    def base(self, request: Request) -> str:
        return request.build_absolute_uri("/scim/v2").rstrip("/")


class ServiceProviderConfigView(ScimView):
    def get(self, request: Request) -> Response:
        docs = request.build_absolute_uri("/")
        return Response(scim.service_provider_config(self.base(request), docs))


class _Discovery(ScimView, ABC):
    """A fixed list of documents (ResourceTypes, Schemas), each also at /<id>."""

    @abstractmethod
    def documents(self, base: str) -> list[dict[str, Any]]:
        """Each concrete view defines it."""

    def get(self, request: Request, doc_id: str | None = None) -> Response:
        docs = self.documents(self.base(request))
        if doc_id is not None:
            doc = next((d for d in docs if d["id"] == doc_id), None)
            if doc is None:
                raise Http404
            return Response(doc)
        return Response(_list_body(docs, len(docs), 1))


class RootSearchView(ScimView):
    """POST /.search across resource types: not offered (501, RFC 7644 §3.4.3)."""

    def post(self, request: Request) -> Response:
        raise NotImplementedException(detail="Search Users or Groups: POST /Users/.search.")


class ResourceTypesView(_Discovery):
    def documents(self, base: str) -> list[dict[str, Any]]:
        return scim.resource_types(base)


class SchemasView(_Discovery):
    def documents(self, base: str) -> list[dict[str, Any]]:
        return scim.schemas(base)


def _of(generic: Any, model: Any) -> Any:
    """`generic[model]` for a model known at run time (ResponseParameters[User], …)."""
    return generic[model]


def _list_body(resources: list[dict[str, Any]], total: int, start: int) -> dict[str, Any]:
    return {
        "schemas": [scim.LIST_RESPONSE],
        "totalResults": total,
        "startIndex": start,
        "itemsPerPage": len(resources),
        "Resources": resources,
    }


def _filtered(qs: QuerySet[Any], columns: dict[str, Column], ast: Any) -> QuerySet[Any]:
    """`qs` narrowed by a parsed filter over `columns`. A value a column cannot be compared
    with (which the grammar allows but the model field refuses) is `invalidFilter`, never
    a 500: the field checks it as the filter is built, before any query runs."""
    try:
        return qs.filter(FilterToQ(columns).visit(ast)).distinct()
    except (ValueError, TypeError, DjangoValidationError) as exc:
        raise InvalidFilterException(detail=f"the filter cannot be applied: {exc}") from None


class _Resources(ScimView, ABC):
    """Users or Groups of the caller's tenant: list (filter, startIndex, count) and
    create at the collection; read, replace, PATCH and delete at /<id>."""

    model: ClassVar[Any]
    columns: ClassVar[dict[str, Column]]

    @abstractmethod
    def queryset(self, request: Request) -> QuerySet[Any]:
        """Each concrete view defines it."""

    @abstractmethod
    def doc(self, obj: Any, base: str) -> dict[str, Any]:
        """Each concrete view defines it."""

    @abstractmethod
    def provision(self, request: Request, parsed: Any, obj: Any = None) -> Model:
        """Each concrete view defines it."""

    @abstractmethod
    def remove(self, obj: Any) -> None:
        """Each concrete view defines it."""

    def _object(self, request: Request, res_id: str) -> Any:
        obj = self.queryset(request).filter(FilterToQ(self.columns)._column_id(res_id)).first()
        if obj is None:
            raise Http404
        return obj

    def _params(self, request: Request) -> ResponseParameters[Any]:
        parameters = _of(ResponseParameters, self.model)
        params: ResponseParameters[Any] = parameters.model_validate(request.query_params.dict())
        return params

    def _render(self, request: Request, obj: Any, status: int = 200) -> Response:
        body = scim.rendered(self.model, self.doc(obj, self.base(request)), self._params(request))
        response = Response(body, status=status)
        response["Location"] = body.get("meta", {}).get("location", "")
        return response

    def get(self, request: Request, res_id: str | None = None) -> Response:
        if res_id is not None:
            return self._render(request, self._object(request, res_id))
        return self._search(request, request.query_params.dict())

    def _search(self, request: Request, params: dict[str, Any]) -> Response:
        search = _of(SearchRequest, self.model).model_validate(
            params, scim_ctx=Context.SEARCH_REQUEST
        )
        qs = self.queryset(request)
        if search.filter is not None:
            qs = _filtered(qs, self.columns, search.filter.ast)
        start = search.start_index or 1
        if start > MAX_START_INDEX:
            raise InvalidValueException(detail=f"startIndex is at most {MAX_START_INDEX}.")
        count = min(scim.MAX_RESULTS, search.count if search.count is not None else 100)
        total = qs.count()
        base = self.base(request)
        page = list(qs.order_by("created_at", "pk")[start - 1 : start - 1 + count])
        docs = [scim.rendered(self.model, self.doc(o, base), search) for o in page]
        return Response(_list_body(docs, total, start))

    def post(self, request: Request, search: bool = False) -> Response:
        if search:  # POST /.search (RFC 7644 §3.4.3): the query in the body
            if not isinstance(request.data, dict):
                raise drf_exceptions.ParseError("A SearchRequest is a JSON object.")
            return self._search(request, request.data)
        parsed = self.model.model_validate(
            request.data, scim_ctx=Context.RESOURCE_CREATION_REQUEST, scim_policy=scim.POLICY
        )
        obj = self.provision(request, parsed)
        return self._render(request, self._reload(request, obj), status=201)

    def _locked(self, request: Request, obj: Any) -> Any:
        """The resource, its row locked until the caller's transaction ends and read again
        under the lock: a concurrent PUT or PATCH of the same resource waits here, then
        sees the other's change instead of overwriting it with a stale copy. PostgreSQL
        takes a row lock (FOR UPDATE); SQLite's IMMEDIATE transactions already hold the
        database's write lock from their first statement."""
        locked = type(obj).objects.select_for_update().filter(pk=obj.pk)
        if not list(locked.values_list("pk", flat=True)):  # removed meanwhile
            raise Http404
        return self._reload(request, obj)

    def put(self, request: Request, res_id: str) -> Response:
        obj = self._object(request, res_id)
        parsed = self.model.model_validate(
            request.data, scim_ctx=Context.RESOURCE_REPLACEMENT_REQUEST, scim_policy=scim.POLICY
        )
        with transaction.atomic():
            obj = self._locked(request, obj)
            obj = self._reload(request, self.provision(request, parsed, obj))
        return self._render(request, obj)

    def patch(self, request: Request, res_id: str) -> Response:
        obj = self._object(request, res_id)
        patch = _of(PatchOp, self.model).model_validate(
            request.data, scim_ctx=Context.RESOURCE_PATCH_REQUEST, scim_policy=scim.POLICY
        )
        with transaction.atomic():  # read, patch and write the copy under the row lock
            obj = self._locked(request, obj)
            current = self.model.model_validate(
                self.doc(obj, self.base(request)), scim_ctx=Context.RESOURCE_QUERY_RESPONSE
            )
            if patch.patch(current, scim_policy=scim.POLICY):
                obj = self._reload(request, self.provision(request, current, obj))
        return self._render(request, obj)

    def delete(self, request: Request, res_id: str) -> Response:
        self.remove(self._object(request, res_id))
        return Response(status=204)

    def _reload(self, request: Request, obj: Model) -> Any:
        return self.queryset(request).get(pk=obj.pk)


class UsersView(_Resources):
    model = scim.ScimUser
    columns = USER_COLUMNS

    def queryset(self, request: Request) -> QuerySet[Person]:
        return scim.people_for_scim(
            Person.objects.filter(
                tenant=caller_of(request).tenant,
                erased_at__isnull=True,
                deleted_by_provider=False,
            )
        )

    def doc(self, obj: Any, base: str) -> dict[str, Any]:
        return scim.user_doc(obj, base)

    def provision(self, request: Request, parsed: Any, obj: Any = None) -> Model:
        spec = scim.person_spec(parsed)
        return person_provision(tenant=caller_of(request).tenant, spec=spec, person=obj)

    def remove(self, obj: Any) -> None:
        person_remove(person=obj)


class GroupsView(_Resources):
    model = Group
    columns = GROUP_COLUMNS

    def queryset(self, request: Request) -> QuerySet[TenantGroup]:
        return TenantGroup.objects.filter(tenant=caller_of(request).tenant).select_related(
            "auth_group"
        )

    def doc(self, obj: Any, base: str) -> dict[str, Any]:
        return scim.group_doc(obj, base)

    def provision(self, request: Request, parsed: Any, obj: Any = None) -> Model:
        spec = scim.group_spec(parsed)
        return group_provision(tenant=caller_of(request).tenant, spec=spec, group=obj)

    def remove(self, obj: Any) -> None:
        group_delete(group=obj)
