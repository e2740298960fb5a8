"""A custom resource's answer to CloudFormation, as a handler sends it.

"The custom resource provider provides the response in a JSON-formatted file and uploads it to the
pre-signed S3 URL" the request names (``ResponseURL``,
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html). On AWS a handler
makes that upload with an HTTPS PUT (AWS's ``cfn-response`` module does it for inline code). An
execution environment here has no network, so ``respond_to_cloudformation`` makes the same upload as an
S3 PutObject to the URL's bucket and key, through the world like every AWS call. Its arguments are
``cfn-response``'s, and so is its default physical id: the log stream's name, which changes from one
execution environment to the next (a known trap: a new id on an Update reads as a replacement, and
CloudFormation then deletes the "old" resource).
"""
from __future__ import annotations

import json
import urllib.parse
from typing import Any

SUCCESS, FAILED = "SUCCESS", "FAILED"


def respond_to_cloudformation(event: dict, context: Any, status: str, data: dict | None = None,
                              physical_resource_id: str | None = None, no_echo: bool = False,
                              reason: str | None = None) -> dict:
    """Upload the response to ``event["ResponseURL"]``; returns the body sent.

    The fields are AWS's: ``StackId``, ``RequestId`` and ``LogicalResourceId`` "copied verbatim from the
    request", a ``Reason`` (required with FAILED), ``PhysicalResourceId`` ("must be identical for all
    responses for the same resource") and ``Data``."""
    import boto3

    if status not in (SUCCESS, FAILED):
        raise ValueError(f"a custom resource answers SUCCESS or FAILED, not {status!r}")
    body = {"Status": status,
            "Reason": reason or f"See the details in CloudWatch Log Stream: {context.log_stream_name}",
            "PhysicalResourceId": physical_resource_id or context.log_stream_name,
            "StackId": event["StackId"], "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"], "NoEcho": no_echo, "Data": data or {}}
    url = urllib.parse.urlsplit(event["ResponseURL"])
    bucket = url.hostname.split(".", 1)[0] if url.hostname else ""
    key = urllib.parse.unquote(url.path.lstrip("/"))
    boto3.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps(body).encode())
    return body
