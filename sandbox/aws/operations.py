"""Which AWS operation a request asks for, read from the request itself (DESIGN.md, rule 1).

Every fact the world keeps about a request (its service and operation in the history, the fault
it meets, the items the exhaustive search reorders it by, the replicas it reads) starts here, and
here reads only what the service itself reads:

- the **service** is the one whose endpoint the URL names: the moto backend that will serve it
  (``adapter.moto_service``), checked against the SigV4 credential scope the request was signed
  for (``.../us-east-1/dynamodb/aws4_request``), which AWS checks too
  (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html);
- the **operation** is read as the service's protocol says, from botocore's model of it: the
  ``X-Amz-Target`` header of the JSON protocols, ``<targetPrefix>.<Operation>``
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.LowLevelAPI.html);
  the ``Action`` parameter of the query protocol
  (https://docs.aws.amazon.com/sns/latest/api/CommonParameters.html); the method and path of
  the REST protocols, matched against each operation's ``requestUri``
  (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html: ``POST
  /2015-03-31/functions/FunctionName/invocations``).

moto picks an operation its own way: it prefers an ``Action`` found in the URL's query, in a form
body, in any body that parses as a query string, or in the headers, over ``X-Amz-Target``
(``moto.core.responses.BaseResponse._get_action``), and picks the protocol from the
``Content-Type``. A request where any of those would name another operation is refused, so that
what moto runs is always what the world records.
"""
from __future__ import annotations

import functools
import gzip
import io
import json
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any

import botocore.loaders
from botocore.model import ServiceModel

from ..errors import RealAwsRefused
from . import adapter

#: The SigV4 credential scope: access key, date, region, service (signing name), terminator.
_SCOPE = re.compile(r"Credential=[^/,\s]*/\d{8}/([^/,\s]+)/([^/,\s]+)/aws4_request")
#: The Content-Types moto reads as JSON (moto.utilities.constants.JSON_TYPES): exactly these strings.
_JSON_TYPES = {"application/x-amz-json-1.0": "json", "application/x-amz-json-1.1": "json",
               "application/json": "rest-json"}
_FORM = "application/x-www-form-urlencoded"
#: A decompressed body may be no larger than the channel's own frame (a gzip bomb is refused).
MAX_BODY = 16 * 1024 * 1024
#: How much of a name the request gave is kept in a refusal or in the history.
_SHOWN = 80


class RequestRefused(RealAwsRefused):
    """A request the world does not serve: no service of the sandbox answers it, or what the request
    says of itself disagrees (its signature's service, its protocol, two names for its operation)."""


@dataclass(frozen=True)
class Operation:
    """What one request asks for.

    ``service``: botocore's name for it in event names and in the history (the service id,
    hyphenized: ``dynamodb``, ``eventbridge``, ``sfn``). ``name``: the operation as the service
    model spells it, or None when the request names no operation the service has (``named`` is then
    what it did name, cut short). ``protocol``: how the request is encoded (``json``, ``query``,
    ``rest-json``, ``rest-xml``). ``model``: botocore's name of the service's model (``events``).
    """

    service: str
    name: str | None
    protocol: str
    named: str = ""
    model: str = ""  # botocore's name for the service's model ("events" for eventbridge)


def identify(request: Any) -> Operation:
    """The service and operation ``request`` asks for (see the module docstring); ``RequestRefused`` if none."""
    headers = _headers(request)
    model = _service_of(request, headers)
    protocol = _protocol(model, headers.get("content-type", ""))
    body = request_body(request, model.service_name, headers)
    if protocol == "json":
        name, named = _json_operation(model, headers.get("x-amz-target", ""))
    elif protocol == "query":
        name, named = _query_operation(model, body)
    else:
        name, named = _rest_operation(model, request, headers)
    if model.service_name != "s3":  # moto's S3 routes by method, path and query itself, and reads no Action
        _check_other_names(request, headers, body if protocol in ("json", "query") else b"", name or named)
    return Operation(model.service_id.hyphenize(), name, protocol, named[:_SHOWN], model.service_name)


# -- the service -----------------------------------------------------------------------------------
#: moto's backend names that are not botocore's service names.
_BOTOCORE_NAME = {"awslambda": "lambda"}


def _service_of(request: Any, headers: dict[str, str]) -> ServiceModel:
    backend = adapter.moto_service(str(request.url))
    if backend is None:
        raise RequestRefused(f"refused {_shown(request.url)}: no service of this sandbox answers at that address")
    model = service_model(_BOTOCORE_NAME.get(backend, backend))
    if model is None:
        raise RequestRefused(f"refused {_shown(request.url)}: moto's {backend} has no botocore model here")
    scope = _SCOPE.search(headers.get("authorization", ""))
    # Unsigned: the gateway's credential check refuses it, with its own message, before anything is served.
    if scope is not None and scope.group(2) != model.signing_name:
        raise RequestRefused(f"refused {_shown(request.url)}: it was signed for {scope.group(2)[:_SHOWN]!r}, and "
                             f"that address is {model.service_id}'s ({model.signing_name!r})")
    return model


@functools.cache
def service_model(name: str) -> ServiceModel | None:
    """botocore's model of service ``name`` as botocore ships it, or None if botocore has none.

    Read by a loader of its own: the clients' shared loader hands out one dict per model, which botocore's
    handlers change once a client has it (S3's ``requestUri`` loses its ``/{Bucket}`` for virtual-hosted
    addresses: botocore.handlers.remove_bucket_from_url_paths_from_model).
    """
    if name not in _loader().list_available_services("service-2"):
        return None
    return ServiceModel(_loader().load_service_model(name, "service-2"), name)


@functools.cache
def _loader() -> botocore.loaders.Loader:
    return botocore.loaders.create_loader()


def _protocol(model: ServiceModel, content_type: str) -> str:
    """The protocol moto reads the request in (``moto.core.request.determine_request_protocol``): from the
    Content-Type, which must be one of the service's own."""
    protocol = str(model.protocol)
    if model.service_name == "s3":  # an object's own Content-Type says nothing of the protocol
        return protocol
    supported = model.metadata.get("protocols") or [protocol]
    if content_type in _JSON_TYPES:
        protocol = _JSON_TYPES[content_type]
    elif content_type.startswith(_FORM):
        protocol = "ec2" if "ec2" in supported else "query"
    if protocol not in supported:
        raise RequestRefused(f"refused a {model.service_id} request in the {protocol} protocol (Content-Type "
                             f"{content_type[:_SHOWN]!r}): the service speaks {', '.join(supported)}")
    return protocol


# -- the operation ---------------------------------------------------------------------------------
def _json_operation(model: ServiceModel, target: str) -> tuple[str | None, str]:
    """``X-Amz-Target: DynamoDB_20120810.PutItem``: the service's target prefix, a dot, the operation."""
    prefix, dot, name = target.partition(".")
    if dot and prefix == model.metadata.get("targetPrefix") and name in _operation_names(model):
        return name, name
    return None, target or "(no X-Amz-Target)"


def _query_operation(model: ServiceModel, body: bytes) -> tuple[str | None, str]:
    """The one ``Action`` of a form-encoded body."""
    actions = {v for k, v in _form(body) if k == "Action"}
    named = next(iter(actions)) if len(actions) == 1 else "(no Action)" if not actions else "(two Actions)"
    return (named if named in _operation_names(model) else None), named


def _rest_operation(model: ServiceModel, request: Any, sent: dict[str, str]) -> tuple[str | None, str]:
    """The operation whose method and ``requestUri`` match the request; the most specific one if several do."""
    parts = urllib.parse.urlsplit(str(request.url))
    path = parts.path or "/"
    if model.service_name == "s3":
        bucket = _virtual_host_bucket(parts.hostname or "")
        if bucket:
            path = f"/{bucket}{path}" if path != "/" else f"/{bucket}"
    query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    method = str(request.method).upper()
    for _, name, pattern, needs, headers in _routes(model.service_name):
        if name[0] == method and pattern.fullmatch(path) and all(h in sent for h in headers) and all(
                key in query and (value is None or query[key] == value) for key, value in needs):
            return name[1], name[1]
    return None, f"{method} {path}"


#: One operation's route: (specificity, (method, name), path pattern, query it needs, headers it needs).
_Route = tuple[tuple[int, int, bool], tuple[str, str], "re.Pattern[str]", tuple, tuple]


@functools.cache
def _routes(service: str) -> list[_Route]:
    """Each operation's route, most specific first.

    Several operations can share a ``requestUri`` (S3's ListParts and GetObject: ``GET /{Bucket}/{Key+}``);
    what tells them apart is what each one must carry: its required members sent in the query string
    (ListParts' ``uploadId``) or in a header (CopyObject's ``x-amz-copy-source``). An operation that
    needs more is tried first, and a deprecated one (PutBucketLifecycle) after its successor.
    """
    model = service_model(service)
    assert model is not None
    routes: list[_Route] = []
    for name in model.operation_names:
        operation = model.operation_model(name)
        uri = str(operation.http.get("requestUri", "/"))
        template, _, query = uri.partition("?")
        pattern, literal = "", 0
        for piece in re.split(r"(\{[^}]+\})", template):
            if piece.startswith("{"):
                pattern += ".+" if piece.endswith("+}") else "[^/]+"
            else:
                pattern += re.escape(piece)
                literal += len(piece)
        needs = [(k, v if sep else None) for k, sep, v in (p.partition("=") for p in query.split("&") if p)]
        headers = []
        shape = operation.input_shape
        for member in shape.required_members if shape is not None else []:
            where = shape.members[member].serialization
            if where.get("location") == "querystring":
                needs.append((where.get("name", member), None))
            elif where.get("location") == "header":
                headers.append(str(where.get("name", member)).lower())
        routes.append(((len(needs) + len(headers), literal, not operation.deprecated),
                       (str(operation.http.get("method", "POST")), name),
                       re.compile(pattern.rstrip("/") + "/?"), tuple(needs), tuple(headers)))
    routes.sort(key=lambda r: r[0], reverse=True)
    return routes


def _virtual_host_bucket(host: str) -> str:
    """The bucket a virtual-hosted S3 address names (``bucket.s3.us-east-1.amazonaws.com``), else ''
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/VirtualHosting.html)."""
    if ".s3." in f".{host}" and not host.startswith("s3."):
        return host.split(".s3.", 1)[0]
    return ""


@functools.cache
def _known(service: str) -> frozenset[str]:
    model = service_model(service)
    return frozenset(model.operation_names) if model is not None else frozenset()


def _operation_names(model: ServiceModel) -> frozenset[str]:
    return _known(model.service_name)


def _check_other_names(request: Any, headers: dict[str, str], body: bytes, name: str) -> None:
    """Refuse a request in which moto would find another operation's name (see the module docstring).

    A JSON body is read as a query string too, as moto reads it: an item whose text holds
    ``&Action=GetItem&`` would make moto run GetItem with a PutItem's body. Refused, not served.
    """
    query = urllib.parse.urlsplit(str(request.url)).query
    pairs = [*_form(query), *(_form(body) if b"=" in body else [])]  # no "=": no Action with a value
    found = {v for k, v in pairs if k == "Action" and v}  # moto passes over an empty one
    found |= {headers["action"]} if "action" in headers else set()
    other = sorted(found - {name})
    if other:
        raise RequestRefused(f"refused a request for {name[:_SHOWN]!r} that also names the operation "
                             f"{other[0][:_SHOWN]!r} (as an Action parameter or header), which moto would run")


# -- the body --------------------------------------------------------------------------------------
def request_body(request: Any, service: str = "", headers: dict[str, str] | None = None) -> bytes:
    """The body as the service reads it: a gzip body (Content-Encoding: gzip) is read decompressed, as moto
    reads it (https://docs.aws.amazon.com/sdkref/latest/guide/feature-compression.html). S3's is the object."""
    body = request.body
    if service == "s3":
        return b""  # the object itself: no operation, item or parameter is read from it
    if hasattr(body, "read"):  # a streaming blob (Lambda Invoke's Payload as a file): read it, and rewind
        if not (hasattr(body, "seek") and hasattr(body, "tell")):
            raise RequestRefused("refused a request whose body is a stream that cannot be read twice")
        at = body.tell()
        data = body.read(MAX_BODY + 1)
        body.seek(at)
        body = data
    body = body.encode() if isinstance(body, str) else bytes(body or b"")
    if (headers if headers is not None else _headers(request)).get("content-encoding") == "gzip":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(body)) as unzipped:
                body = unzipped.read(MAX_BODY + 1)
        except (OSError, EOFError, ValueError):
            raise RequestRefused("refused a request whose gzip body does not decompress") from None
        if len(body) > MAX_BODY:
            raise RequestRefused(f"refused a request whose body decompresses to over {MAX_BODY:,} bytes")
    return body


def _form(data: bytes | str) -> list[tuple[str, str]]:
    """Pairs of a query string or form body (every pair, repeats included); text that is no form gives few."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return urllib.parse.parse_qsl(text, keep_blank_values=True)


def _headers(request: Any) -> dict[str, str]:
    """The request's headers by lower-case name (each name comes once: the channel refuses two of one name)."""
    return {str(k).lower(): v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
            for k, v in request.headers.items()}


def _shown(url: Any) -> str:
    parts = urllib.parse.urlsplit(str(url))
    return f"{parts.scheme}://{parts.netloc}"[:_SHOWN]


# -- AWS's answers to a request it cannot serve ----------------------------------------------------
#: The deepest JSON body the world parses: DynamoDB nests attributes 32 levels at most
#: (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html), about twice
#: that in JSON; no other service here nests its parameters half as deep.
MAX_JSON_DEPTH = 100


def unknown_operation(operation: Operation) -> tuple[int, dict, bytes]:
    """AWS's answer to an operation the service does not have, in the service's protocol: a JSON service's
    ``UnknownOperationException`` (400), the query protocol's ``InvalidAction`` (400,
    https://docs.aws.amazon.com/sns/latest/api/CommonErrors.html), Lambda's 404 for a path it does not route,
    S3's ``MethodNotAllowed`` (405, https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html)."""
    message = f"The operation {operation.named!r} is not one {operation.service} has."
    if operation.protocol == "query":
        return error_answer(operation, 400, "InvalidAction", message)
    if operation.protocol == "rest-xml":
        return error_answer(operation, 405, "MethodNotAllowed", message)
    if operation.protocol == "rest-json":
        return error_answer(operation, 404, "UnknownOperationException", message)
    return error_answer(operation, 400, "UnknownOperationException", message)


def error_answer(operation: Operation, status: int, code: str, message: str) -> tuple[int, dict, bytes]:
    """An error answer botocore parses as the service's own: JSON with ``__type`` (and Lambda's
    ``x-amzn-ErrorType`` header), or the XML ``ErrorResponse`` of the query and REST-XML protocols."""
    if operation.protocol == "query":  # https://docs.aws.amazon.com/sns/latest/api/CommonErrors.html
        body = (f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{_xml(message)}</Message>"
                "</Error><RequestId>sandbox</RequestId></ErrorResponse>")
        return status, {"Content-Type": "text/xml"}, body.encode()
    if operation.protocol == "rest-xml":  # https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{_xml(message)}'
                "</Message><RequestId>sandbox</RequestId></Error>")
        return status, {"Content-Type": "application/xml"}, body.encode()
    model = service_model(operation.model)
    version = (model.metadata.get("jsonVersion") if model is not None else None) or "1.0"
    headers = {"Content-Type": f"application/x-amz-json-{version}", "x-amzn-ErrorType": code}
    return status, headers, json.dumps({"__type": f"com.amazon.coral.service#{code}", "message": message}).encode()


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def json_depth(data: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True if ``data`` (parsed JSON) nests no deeper than ``limit`` (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return True
