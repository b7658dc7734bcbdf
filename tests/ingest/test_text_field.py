"""The document text field refuses surrogate characters exactly as DRF's CharField does
(same message, the first surrogate), by a cheaper check (issue 22: ingest throughput)."""

import pytest
from rest_framework import serializers

from common.fields import LongTextField


@pytest.mark.parametrize(
    "value",
    ["plain text", "", "a\ud800b", "x" * 5000 + "\udfff" + "\ud801", "é ☃ 𝄞", "\udbff"],
)
def test_long_text_field_validates_as_charfield(value):
    def outcome(field):
        try:
            return ("ok", field.run_validation(value))
        except serializers.ValidationError as exc:
            return ("error", exc.detail)

    drf = serializers.CharField(allow_blank=True, trim_whitespace=False)
    ours = LongTextField(allow_blank=True, trim_whitespace=False)
    assert outcome(ours) == outcome(drf)
    if any("\ud800" <= c <= "\udfff" for c in value):
        assert outcome(ours)[0] == "error"
