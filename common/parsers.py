"""The API's JSON parser: DRF's, made safe against hostile bodies.

Every refusal is a `ParseError` (400 `MALFORMED_REQUEST`), raised before a view sees data:

- nesting deeper than the interpreter's recursion limit makes `json` raise
  `RecursionError`, which DRF does not catch (it would be a 500);
- nesting deeper than `MAX_JSON_DEPTH`, so a body that parses can never be too deep to
  store, query or render later (SQLite's JSON functions stop at 1000 levels; rendering
  runs deeper in the stack than parsing);
- a string (value or key) containing U+0000: PostgreSQL can store it neither in text nor
  in jsonb, so it would fail at write time (a 500) on PostgreSQL and be accepted on SQLite;
- invalid UTF-8 and non-JSON constants (`NaN`, `Infinity`), as in DRF.
"""

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError

MAX_JSON_DEPTH = 64


def _path(parts: tuple[Any, ...]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    out = out or "$"
    return out if len(out) <= 120 else out[:117] + "..."


def json_problem(value: Any, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why a parsed JSON value is refused, or None. Iterative: a hostile value cannot
    exhaust the stack here."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return f"strings must not contain U+0000 (at {_path(path)})"
            continue
        if isinstance(item, dict):
            children: Any = item.items()
        elif isinstance(item, list):
            children = enumerate(item)
        else:
            continue
        if len(path) >= max_depth:
            return f"nested deeper than {max_depth} levels (at {_path(path)})"
        for key, child in children:
            if isinstance(key, str) and "\x00" in key:
                return f"keys must not contain U+0000 (at {_path(path)})"
            if isinstance(child, str | dict | list):
                stack.append((child, (*path, key)))
    return None


class JSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - nested too deeply.") from exc
        except LookupError as exc:  # an unknown charset
            raise ParseError(f"JSON parse error - {exc}") from exc
        problem = json_problem(data)
        if problem is not None:
            raise ParseError(f"JSON parse error - {problem}.")
        return data
