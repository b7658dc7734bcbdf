"""`GET /healthz` (CONTRACT §3.6): no auth; 503 when the database does not answer."""

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from common.sql import database_ping


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        database_ping(connection)
    except DatabaseError:
        return JsonResponse({"status": "degraded", "database": "unavailable"}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})
