"""The gateway of a world whose AWS is a server: each request goes out over HTTP, still one at a time.

``gateway.Gateway`` hands each request to moto in-process. ``HttpGateway`` keeps everything else
it does (faults, the credential check, the history, the listeners, and the one lock that makes
every request atomic) and sends the request to an HTTP endpoint instead: moto's own server in
real-threads mode, LocalStack or AWS in endpoint mode. The lock matters as much here: moto's
server serves each request on a thread of its own and is no more thread safe than moto in-process.

``Forwarder`` is the HTTP part: it points the request at the endpoint, signs it again when the
endpoint needs other credentials than the world's fake ones, and sends it with urllib3.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.exceptions import EndpointConnectionError

from .gateway import UNKNOWN_OPERATION, Gateway, Served, fault_response
from .operations import Operation

if TYPE_CHECKING:
    from botocore.awsrequest import AWSPreparedRequest
    from botocore.credentials import Credentials

    from ..core.faults import AwsFault

#: The service and region a request was signed for, from its SigV4 credential scope.
_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request")
#: Headers that belong to one signature; a request signed again gets its own.
_SIGNATURE_HEADERS = ("authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256")


class Forwarder:
    """Sends a botocore request to ``endpoint`` (None: where botocore addressed it, AWS's own endpoints).

    ``credentials``: sign every request again with these (endpoint mode); None keeps the world's
    signature, which moto's server does not check. ``rewrite(service, op, params)`` may change a
    request's parameters before it is sent (namespaced resource names); it returns the new
    parameters, or None to leave the request as it is.
    """

    def __init__(self, endpoint: str | None, credentials: "Credentials | None" = None,
                 rewrite: Callable[[str, str, dict], dict | None] | None = None, read_timeout: float = 30.0):
        self.endpoint = urlsplit(endpoint) if endpoint else None
        self.credentials = credentials
        self.rewrite = rewrite
        self.pool = urllib3.PoolManager(num_pools=4, maxsize=16, retries=False,
                                        timeout=urllib3.Timeout(connect=5.0, read=read_timeout))

    def url(self, url: str) -> str:
        if self.endpoint is None:
            return url
        parts = urlsplit(url)
        return urlunsplit((self.endpoint.scheme, self.endpoint.netloc, parts.path, parts.query, ""))

    def send(self, service: str, op: str, request: AWSPreparedRequest, params: dict) -> Served:
        url = self.url(request.url)
        headers = {k: v.decode() if isinstance(v, bytes) else str(v) for k, v in request.headers.items()}
        body = request.body
        new_params = self.rewrite(service, op, params) if self.rewrite is not None else None
        if new_params is not None:
            body = json.dumps(new_params).encode()
            headers = {k: v for k, v in headers.items() if k.lower() != "content-length"}  # urllib3 counts anew
        if self.credentials is not None:
            headers = self._signed(self.credentials, url, request.method, headers, body)
        try:
            answer = self.pool.request(request.method, url, body=body, headers=headers, redirect=False)
        except urllib3.exceptions.HTTPError as exc:
            # What a handler would meet on AWS when the endpoint cannot be reached.
            raise EndpointConnectionError(endpoint_url=url, error=exc) from None
        return answer.status, dict(answer.headers), answer.data

    @staticmethod
    def _signed(credentials: "Credentials", url: str, method: str, headers: dict, body: Any) -> dict:
        found = _SCOPE.search(headers.get("Authorization", ""))
        region, signing_name = found.groups() if found else ("us-east-1", "")
        fresh = AWSRequest(method=method, url=url, data=body,
                           headers={k: v for k, v in headers.items() if k.lower() not in _SIGNATURE_HEADERS})
        SigV4Auth(credentials, signing_name, region).add_auth(fresh)
        return dict(fresh.headers.items())

    def close(self) -> None:
        self.pool.clear()


class HttpGateway(Gateway):
    """A ``Gateway`` that serves each request by sending it over HTTP with ``forwarder`` (under the lock)."""

    in_process = False

    def __init__(self, *args: Any, forwarder: Forwarder, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.forwarder = forwarder

    def _serve(self, fault: "AwsFault | None", request: AWSPreparedRequest, label: str, operation: Operation,
               params: dict) -> tuple[int, dict, bytes, bool]:
        if fault is not None and fault.kind != "timeout-applied":
            return (*fault_response(fault), False)
        service, op = operation.service, operation.name or UNKNOWN_OPERATION
        local = self.local_ops.get((service, op))

        def forward() -> Served:
            return self.forwarder.send(service, op, request, params)

        status, headers, body = local(params, forward) if local is not None else forward()
        return status, headers, body, False
