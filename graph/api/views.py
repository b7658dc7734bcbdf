"""Facts and queries (CONTRACT §3.3). Reads are restricted to sources the caller may read."""

import uuid
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import NotFound
from common.times import now_us
from graph.models import NodeVersion
from graph.search import versions_search
from graph.selectors import node_version_visible, readable_nodes, versions_visible
from tenancy.auth import caller_of

from .records import render_records
from .serializers import AsOfQuerySerializer, QueryInSerializer, RecordSerializer, RecordsSerializer

_AS_OF_PARAMS = [
    OpenApiParameter("validAt", int, description="valid time, µs or RFC 3339 (default now)"),
    OpenApiParameter("txAt", int, description="transaction time, µs or RFC 3339 (default now)"),
]


def _readable_node_id(request: Request, node_id: Any) -> uuid.UUID:
    try:
        node_uuid = uuid.UUID(str(node_id))
    except ValueError as exc:
        raise NotFound("No such node.") from exc
    if not readable_nodes(caller_of(request)).filter(pk=node_uuid).exists():
        raise NotFound("No such node.")
    return node_uuid


class NodeView(APIView):
    @extend_schema(parameters=_AS_OF_PARAMS, responses={200: RecordSerializer}, tags=["facts"])
    def get(self, request: Request, node_id: str) -> Response:
        """The version of a node visible at (validAt, txAt), or 404."""
        params = AsOfQuerySerializer(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        node_uuid = _readable_node_id(request, node_id)
        now = now_us()
        version = node_version_visible(
            node_id=node_uuid,
            valid_at=params.validated_data.get("validAt", now),
            tx_at=params.validated_data.get("txAt", now),
        )
        if version is None:
            raise NotFound("No version of this node is visible at that time.")
        return Response(render_records([version])[0])


class NodeHistoryView(APIView):
    @extend_schema(responses={200: RecordsSerializer}, tags=["facts"])
    def get(self, request: Request, node_id: str) -> Response:
        """Every version of a node, oldest first."""
        node_uuid = _readable_node_id(request, node_id)
        versions = list(NodeVersion.objects.filter(node_id=node_uuid).order_by("tx_from"))
        return Response({"records": render_records(versions)})


class QueryView(APIView):
    @extend_schema(request=QueryInSerializer, responses={200: RecordsSerializer}, tags=["facts"])
    def post(self, request: Request) -> Response:
        """Facts visible at (validAt, txAt) with all the given labels, found by full-text
        search when `text` is given and ordered by relevance or node id (`order`)."""
        body = QueryInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        now = now_us()
        tx_at = data.get("txAt", now)
        versions = versions_visible(
            nodes=readable_nodes(caller_of(request)),
            valid_at=data.get("validAt", now),
            tx_at=tx_at,
            labels=data["labels"],
            current="txAt" not in data,
        )
        if data["text"].strip():
            order = data.get("order", "relevance")
            found = versions_search(versions, data["text"], limit=data["limit"], order=order)
        else:  # nothing to rank by: node id order, whatever `order` says
            found = list(versions[: data["limit"]])
        return Response({"records": render_records(found)})
