"""JSON as Lambda hands it over and takes it back, with the numbers boto3 reads out of DynamoDB."""
from __future__ import annotations

import decimal
from typing import Any


def json_number(obj: Any) -> Any:
    """``json.dumps``'s ``default``: a ``Decimal`` (how boto3's resource hands back a DynamoDB number) as
    the number it holds; anything else JSON cannot hold is a TypeError, as ``json`` says it."""
    if isinstance(obj, decimal.Decimal):
        return int(obj) if obj == obj.to_integral_value() and obj.is_finite() else float(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")
