"""The baseline for the answer benchmark: the cheapest useful DRF write.

An `APIView` with the project's default authentication and permission classes (the same
Bearer-key lookup an answer pays for) that parses the JSON body, inserts one row with a
raw INSERT into a bench-only table and returns 201. No model, no serializer, one
autocommit statement — what "a minimal DRF endpoint that inserts one row" costs here.
"""

import json

from django.db import connection
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

TABLE = "bench_baseline_insert"


def baseline_table_create() -> None:
    """Create (or empty) the baseline's table."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} ("
            " id bigserial PRIMARY KEY,"
            " tenant_id uuid NOT NULL,"
            " body jsonb NOT NULL,"
            " created_at timestamptz NOT NULL DEFAULT now())"
        )
        cursor.execute(f"TRUNCATE {TABLE}")


def baseline_row_count() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {TABLE}")
        return int(cursor.fetchone()[0])


class BaselineInsertView(APIView):
    """POST /bench/insert → 201 after inserting one row (default auth + permission)."""

    def post(self, request: Request) -> Response:
        caller = request.user
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {TABLE} (tenant_id, body) VALUES (%s, %s) RETURNING id",
                [caller.tenant.pk, json.dumps(request.data)],  # type: ignore[union-attr]
            )
            row_id = cursor.fetchone()[0]
        return Response({"id": row_id}, status=201)
