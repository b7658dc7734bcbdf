"""The baselines for the answer benchmark, both with the project's default authentication
and permission classes (the same Bearer-key lookup an answer pays for):

- `/bench/create` (`BaselineCreateView`): DRF's own minimal create endpoint — a
  `CreateAPIView` whose `ModelSerializer` validates the body and saves one `BaselineRow`
  through the ORM, answering 201. The issue's "minimal DRF endpoint that inserts one row";
  the target ratio is measured against it.
- `/bench/insert` (`BaselineInsertView`): stricter still — an `APIView` that skips the
  serializer and the ORM and inserts the JSON body with one raw INSERT. Reported beside it.
"""

import json

from django.db import connection
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .models import BaselineRow

TABLE = "bench_baseline_insert"


def baseline_table_create() -> None:
    """Create (or empty) the baselines' tables."""
    if BaselineRow._meta.db_table not in connection.introspection.table_names():
        with connection.schema_editor() as editor:
            editor.create_model(BaselineRow)
    BaselineRow.objects.all().delete()
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
    """Rows written by the raw-INSERT baseline."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {TABLE}")
        return int(cursor.fetchone()[0])


def baseline_model_row_count() -> int:
    """Rows written by the ModelSerializer baseline."""
    return BaselineRow.objects.count()


class BaselineRowSerializer(serializers.ModelSerializer):
    answerIndex = serializers.IntegerField(source="answer_index")

    class Meta:
        model = BaselineRow
        fields = ["id", "answerIndex"]


class BaselineCreateView(generics.CreateAPIView):
    """POST /bench/create → 201 after saving one `BaselineRow` (default auth + permission)."""

    serializer_class = BaselineRowSerializer

    def perform_create(self, serializer: BaselineRowSerializer) -> None:
        serializer.save(tenant=self.request.user.tenant)  # type: ignore[union-attr]


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
