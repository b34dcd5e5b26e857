"""JSON from untrusted sources, parsed with limits on size, nesting depth and number length.

``json.loads`` alone turns hostile text into a 500 or a stall: 50,000 nested brackets raise
RecursionError, an integer of more than 4,300 digits raises a bare ValueError (Python's
int-string limit), and a 4,000-digit integer is accepted and later overflows ``float()``. Every
entry point that reads JSON a user sent (the API bodies, schema files, the CLI's schema) uses
:func:`loads` and gets one ``ValueError`` subclass naming the limit.
"""

from __future__ import annotations

import json
from typing import Any

MAX_BYTES = 5 * 1024 * 1024  # a 200-column schema with 1,000 categories each fits
MAX_DEPTH = 32  # the deepest legitimate body (a schema) nests 4 levels
MAX_NUMBER_CHARS = 100  # digits of one JSON number: far beyond any bound, count or amount


class JsonLimitError(ValueError):
    """The text is not JSON, or breaks a limit; the message names which."""


def _number(kind: type):
    def parse(text: str):
        if len(text) > MAX_NUMBER_CHARS:
            raise JsonLimitError(f"a number in the JSON has {len(text)} characters; the limit is {MAX_NUMBER_CHARS}")
        return kind(text)

    return parse


def _depth(value: Any) -> int:
    """Nesting depth, iteratively (no recursion to exhaust)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if depth > MAX_DEPTH:
                break
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def loads(text: str | bytes, *, max_bytes: int = MAX_BYTES) -> Any:
    if len(text) > max_bytes:
        raise JsonLimitError(f"the JSON is {len(text):,} bytes; the limit is {max_bytes:,}")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonLimitError(f"the JSON is not UTF-8: {exc}") from None
    try:
        value = json.loads(text, parse_int=_number(int), parse_float=_number(float))
    except JsonLimitError:
        raise
    except RecursionError:
        raise JsonLimitError(f"the JSON nests deeper than the limit of {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, or Python's own int-string limit
        raise JsonLimitError(f"not valid JSON: {exc}") from None
    if _depth(value) > MAX_DEPTH:
        raise JsonLimitError(f"the JSON nests deeper than the limit of {MAX_DEPTH} levels")
    return value
