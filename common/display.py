"""Values shown to people in the steward pages: JSON with its µs times as dates."""

import json
import re
from typing import Any

from common.times import iso

# A 16-digit integer is a µs time (2001 to 2286); people see it as a date.
_RAW_US = re.compile(r"(?<![\w-])1\d{15}(?![\w-])")


def json_for_people(value: Any) -> str:
    """A JSON value (an audit detail, a provenance) as text, µs times shown as dates."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return _RAW_US.sub(lambda m: iso(int(m.group())), text)
