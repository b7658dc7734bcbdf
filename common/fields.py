"""DRF fields and serializer bases shared by the APIs."""

import re
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator

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


_SURROGATE = re.compile("[\ud800-\udfff]")


class _SurrogatesRefused(ProhibitSurrogateCharactersValidator):
    """DRF's refusal of surrogate characters, with the same error for the first one, by
    one regex search instead of a Python loop over every character."""

    def __call__(self, value: Any) -> None:
        found = _SURROGATE.search(str(value))
        if found:
            message = self.message.format(code_point=ord(found.group()))
            raise serializers.ValidationError(message, code=self.code)


class LongTextField(serializers.CharField):
    """A CharField for long texts (a document's text): the same validation, cheaper per
    character."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = [
            _SurrogatesRefused() if type(v) is ProhibitSurrogateCharactersValidator else v
            for v in self.validators
        ]


def with_field(
    fields: dict[str, serializers.Field[Any, Any, Any, Any]],
    name: str,
    field: serializers.Field[Any, Any, Any, Any],
    *,
    after: str | None,
) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
    """`fields` (a serializer's `get_fields()`) with `field` as `name`, right after the
    field `after` (first if None).

    For a field named like an attribute of DRF's `Field` itself (`label`, `source`): the
    stubs refuse it as a class attribute of a serializer, so `get_fields()` adds it, where
    it would have been declared. The place keeps the order of the schema's properties, of
    the validated data and of the validation errors."""
    items = list(fields.items())
    position = 0 if after is None else list(fields).index(after) + 1
    items.insert(position, (name, field))
    return dict(items)


class StrictSerializer(serializers.Serializer[Any]):
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
