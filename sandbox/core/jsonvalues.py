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


# The names below are for documents whose shape belongs to someone else, so the sandbox cannot type their keys: it
# reads the few it needs and passes the rest on. The sandbox's own data (its records, reports, messages, settings)
# has TypedDicts and dataclasses of its own instead, so that a misspelled key there is a type error.

#: A JSON object whose keys another party defines: an AWS request's parameters or its response
#: (https://docs.aws.amazon.com/general/latest/gr/aws-apis.html, one page per service's API reference), what a
#: learner's handler returned, a Jupyter notebook's JSON (https://nbformat.readthedocs.io/en/latest/format_description.html).
JsonObject = dict[str, Any]

#: An event as a Lambda handler receives it: AWS's shape for each event source
#: (https://docs.aws.amazon.com/lambda/latest/dg/lambda-services.html), or a direct invoke's payload, whatever the
#: caller sent. The records the sandbox builds itself (SQS, Kinesis, DynamoDB Streams, SNS...) are TypedDicts in
#: ``sandbox.aws.event_shapes``; this is the envelope and anything a learner hands over.
LambdaEvent = dict[str, Any]

#: A DynamoDB item in wire form, each attribute a one-key object of its type (``{"S": "o-1"}``, ``{"N": "5"}``):
#: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_AttributeValue.html
DynamoItem = dict[str, Any]
