"""The bench-only model behind the idiomatic baseline (`/bench/create`). Its table is
created by `bench.baseline.baseline_table_create` (the bench app has no migrations)."""

from django.db import models


class BaselineRow(models.Model):
    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.CASCADE, related_name="+")
    answer_index = models.IntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "bench"

    def __str__(self) -> str:
        return f"baseline row {self.pk}"
