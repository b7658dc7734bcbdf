"""DRF fields and serializer bases shared by the APIs."""

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .times import TimeParseError, parse_us


@extend_schema_field(OpenApiTypes.INT64)
class MicrosField(serializers.Field):
    """A time: µs since the epoch (int) on output; int or RFC 3339 string on input."""

    def to_internal_value(self, data: Any) -> int:
        try:
            return parse_us(data)
        except TimeParseError as exc:
            raise serializers.ValidationError(str(exc)) from exc

    def to_representation(self, value: int) -> int:
        return int(value)


class StrictSerializer(serializers.Serializer):
    """Rejects fields it does not declare (a typo must not be silently dropped)."""

    def to_internal_value(self, data: Any) -> Any:
        unknown: dict[str, list[str]] = {}
        if isinstance(data, dict):
            unknown = {str(k): ["Unknown field."] for k in data if k not in self.fields}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if unknown and isinstance(exc.detail, dict):
                raise serializers.ValidationError({**exc.detail, **unknown}) from exc
            raise
        if unknown:
            raise serializers.ValidationError(unknown)
        return value
