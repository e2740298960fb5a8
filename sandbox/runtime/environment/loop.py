"""A runtime loop for platforms without awslambdaric's wheels (macOS, Windows).

AWS ships the Runtime Interface Client for Linux only, and it builds from source only with a
C++ toolchain and libcurl. Where it is missing, this loop does what its ``bootstrap.run``
does for the sandbox, in the same words: import the module ``_HANDLER`` names (an init error
otherwise), then for each invocation build the context, call the handler, send back the JSON
response or an error payload with ``errorMessage``, ``errorType``, ``requestId`` and
``stackTrace``; anything that is not an ``Exception`` leaves the loop and ends the process.
``tests/test_environment.py`` holds this loop to awslambdaric's payloads on Linux.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from typing import Any

from ...core.jsonvalues import json_number
from .wire import ErrorPayload, XrayFault


class LambdaContext:
    """awslambdaric's context attributes, read from the environment as it reads them."""

    def __init__(self, request_id: str, deadline_ms: int, arn: str):
        self.aws_request_id = request_id
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME")
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION")
        self.invoked_function_arn = arn
        self.tenant_id = None
        self.client_context = None
        self.identity = None
        self._deadline_ms = deadline_ms

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self._deadline_ms - int(time.time() * 1000))


def _error(message: str, kind: str, trace: list[str] | None, request_id: str | None = None) -> ErrorPayload:
    result: ErrorPayload = {"errorMessage": message, "errorType": kind, "requestId": request_id or ""}
    result["stackTrace"] = trace if trace is not None else []
    return result


def make_xray_fault(kind: str, message: str) -> XrayFault:
    """Called inside the ``except`` block, as awslambdaric's is (the guest notes the error's classes here)."""
    return {"type": kind, "message": message}


def _trace(tb: Any) -> list[str]:
    frames = [f for f in traceback.extract_tb(tb) if not f.filename.endswith(("/loop.py", "\\loop.py"))]
    return traceback.format_list(frames)


def _load(handler: str) -> Any:
    try:
        modname, fname = handler.rsplit(".", 1)
    except ValueError as exc:
        raise _Fault("Runtime.MalformedHandlerName", f"Bad handler '{handler}': {exc}") from None
    if modname.split(".")[0] in sys.builtin_module_names:
        raise _Fault("Runtime.BuiltInModuleConflict", f"Cannot use built-in module {modname} as a handler module")
    try:
        module = importlib.import_module(modname.replace("/", "."))
    except ImportError as exc:
        raise _Fault("Runtime.ImportModuleError", f"Unable to import module '{modname}': {exc}") from None
    except SyntaxError as exc:
        raise _Fault("Runtime.UserCodeSyntaxError", f"Syntax error in module '{modname}': {exc}",
                     [f'  File "{exc.filename}" Line {exc.lineno}\n    {exc.text}']) from None
    try:
        return getattr(module, fname)
    except AttributeError:
        raise _Fault("Runtime.HandlerNotFound", f"Handler '{fname}' missing on module '{modname}'") from None


class _Fault(Exception):
    def __init__(self, kind: str, message: str, trace: list[str] | None = None):
        super().__init__(message)
        self.kind, self.message, self.trace = kind, message, trace


def _encode(response: Any) -> tuple[Any, str]:
    if isinstance(response, bytes):
        return response, "application/unknown"

    try:
        return json.dumps(response, default=json_number), "application/json"
    except (TypeError, ValueError) as exc:
        raise _Fault("Runtime.MarshalError", f"Unable to marshal response: {exc}") from None


def run(handler: str, client: Any) -> None:
    try:
        function = _load(handler)
    except _Fault as fault:
        client.post_init_error(_error(fault.message, fault.kind, fault.trace))
        sys.exit(1)
    except Exception as exc:
        kind, value, tb = type(exc), exc, exc.__traceback__
        client.post_init_error(_error(str(value), kind.__name__, _trace(tb)))
        sys.exit(1)
    while True:
        job = client.wait_next_invocation()
        try:
            context = LambdaContext(job.invoke_id, job.deadline_time_in_ms, job.invoked_function_arn)
            result, content_type = _encode(function(json.loads(job.event_body), context))
        except _Fault as fault:
            client.post_invocation_error(job.invoke_id, json.dumps(_error(fault.message, fault.kind, fault.trace,
                                                                          job.invoke_id)))
            continue
        except Exception as exc:
            kind, value, tb = type(exc), exc, exc.__traceback__
            make_xray_fault(kind.__name__, str(value))
            client.post_invocation_error(job.invoke_id, json.dumps(_error(str(value), kind.__name__, _trace(tb),
                                                                          job.invoke_id)))
            continue
        client.post_invocation_result(job.invoke_id, result, content_type)
