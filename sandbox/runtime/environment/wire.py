"""The one channel between an execution environment and the world: framed JSON messages.

Each message is a 4-byte big-endian length and a UTF-8 JSON object with a string ``t`` (its
kind). The world reads what an environment sends as untrusted input: a frame over
``MAX_FRAME`` bytes, bytes that are not JSON, JSON nested deeper than ``MAX_DEPTH``, an object
of an unknown kind, or a field missing or not of its kind's type (``FROM_ENVIRONMENT``) end that
environment's channel with ``ProtocolError``, which the runtime reports as the environment's
failure. Nothing an environment sends is executed or unpickled, and nothing it says of itself is
believed: an AWS request carries no name for its service or operation (the world reads both from
the request), and the fields the world does read are checked here before anything uses them.
"""
from __future__ import annotations

import json
import math
import os
import re
import select
import socket
import struct
import time
from collections.abc import Callable, Mapping
from typing import Any, TypedDict, cast

from ...core.jsonvalues import JsonObject
from ...core.services import EffectArgs

#: The largest message either side accepts: Lambda's own payload limit is 6 MB, and an AWS
#: request body is far smaller; the margin covers base64 and JSON escaping.
MAX_FRAME = 16 * 1024 * 1024
#: Real seconds an environment may compute between two requests without the world's clock seeing it.
#: Past it, all of that time counts, as it would on Lambda, toward the function's timeout and the clock
#: (DESIGN: "Time as on Lambda"). Under it, a run stays the same from machine to machine, byte for byte.
QUANTUM = 1.0
#: Lambda's limit on a synchronous invocation's response: "For synchronous invocations, the maximum payload
#: size is 6 MB" (https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html). A larger response crosses the
#: channel cut to one byte over it: the world measures it, and a response that big is an error whatever it held.
RESPONSE_LIMIT = 6 * 1024 * 1024
#: The most environments the template hands the world at once, each waiting behind its door for a function:
#: the world opens doors on its own cold starts and asks the template again when it has none left.
HAND_OUT = 4
_HEADER = struct.Struct(">I")

class Kind:
    """The kinds of message (field ``t``), each spelled here once."""

    READY = "ready"            # the bootstrap is loaded; the handler's init comes next
    NEXT = "next"              # Runtime API: GET /invocation/next
    RESPONSE = "response"      # Runtime API: POST /invocation/{id}/response
    ERROR = "error"            # Runtime API: POST /invocation/{id}/error
    INIT_ERROR = "init_error"  # Runtime API: POST /init/error
    AWS = "aws"                # an AWS request, as botocore would send it
    EFFECT = "effect"          # a call to the effect services
    SLEEP = "sleep"            # time.sleep
    LOG = "log"                # a write to stdout or stderr (no answer)
    EXIT = "exit"              # sys.exit: where the code was when it ended the process (no answer)
    INVOCATION = "invocation"  # the world's answer to NEXT
    ANSWER = "answer"          # the world's answer to any other request
    # SnapStart: a snapshot environment, its init done, makes restored copies of itself.
    SNAPSHOT = "snapshot"      # init done, before-snapshot hooks run: ready to be restored (no answer)
    CLONE = "clone"            # world -> snapshot: restore one more environment
    CLONED = "cloned"          # snapshot -> world: its pid, with the new environment's channel attached
    KILL_CLONE = "kill_clone"  # world -> snapshot: SIGKILL one of its restored environments (no answer)
    CLONE_STATUS = "clone_status"  # world -> snapshot: how one ended; snapshot -> world: its status


#: The longest sleep CPython's ``time.sleep`` takes (a PyTime_t of nanoseconds); a longer one raises
#: OverflowError in the handler, so an environment that asks for one is not running CPython's sleep.
MAX_SLEEP = (2**63 - 1) / 1e9
#: How deep a message may nest. What an environment sends is flat but for an effect's order (an order
#: from an event: a few levels), and a deeper one would make the world's own code recurse past its limit.
MAX_DEPTH = 32


def _text(limit: int | None = None) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, str) and (limit is None or len(v) <= limit)


def _integer(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _seconds(v: Any) -> bool:
    """A sleep's length: a real number (``True`` is no number here), finite, from 0 to ``MAX_SLEEP``."""
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and 0 <= v <= MAX_SLEEP)


def _frames(v: Any) -> bool:
    """Where ``sys.exit`` was called: at most 50 frames of [file, line, function]."""
    return isinstance(v, list) and len(v) <= 50 and all(
        isinstance(f, list) and len(f) == 3 and _text(4096)(f[0]) and _integer(f[1]) and _text(256)(f[2])
        for f in v)


def _classes(v: Any) -> bool:
    """An error's class names (its MRO): at most 64 names, each at most 256 characters."""
    return isinstance(v, list) and len(v) <= 64 and all(_text(256)(c) and c for c in v)


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")  # an HTTP header name (RFC 9110, section 5.1)
_METHOD = re.compile(r"[A-Z]{1,16}")
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def _headers(v: Any) -> bool:
    """HTTP headers as botocore sends them: names that are tokens, each once whatever its case, and values
    with no line breaks or NULs (which would split the request when it is sent on over HTTP)."""
    if not isinstance(v, dict) or len(v) > 200:
        return False
    names = {str(k).lower() for k in v}
    return len(names) == len(v) and all(
        isinstance(k, str) and _TOKEN.fullmatch(k) and isinstance(x, str) and len(x) <= 16384
        and not any(c in x for c in "\r\n\0") for k, x in v.items())


def _url(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= 16384 and v.startswith(("https://", "http://")) and v.isprintable()


#: What an environment may send the world: each kind's fields, and what each must be. A message with
#: a field missing or of another type breaks the protocol; fields not named here are never read.
FROM_ENVIRONMENT: dict[str, dict[str, Callable[[Any], bool]]] = {
    Kind.READY: {},
    Kind.NEXT: {},
    Kind.RESPONSE: {"body": _text()},
    Kind.ERROR: {"body": _text()},
    Kind.INIT_ERROR: {"body": _text()},
    # The operation and service are no fields: the world reads them from the request (sandbox.aws.operations).
    Kind.AWS: {"method": lambda v: isinstance(v, str) and bool(_METHOD.fullmatch(v)), "url": _url,
               "headers": _headers, "body": lambda v: isinstance(v, str) and bool(_BASE64.fullmatch(v))},
    Kind.EFFECT: {"kind": _text(64), "args": lambda v: isinstance(v, dict) and set(v) <= {"order", "idempotency_key"}},
    Kind.SLEEP: {"seconds": _seconds},
    Kind.LOG: {"stream": lambda v: v in ("stdout", "stderr"), "text": _text()},
    Kind.EXIT: {"frames": _frames},
    Kind.SNAPSHOT: {},
    Kind.CLONED: {"pid": lambda v: _integer(v) and v > 0},
    # How a restored environment ended, by its snapshot (its parent, so the only one who knows): an exit
    # status (0 to 255) or minus a signal, or None while it runs.
    Kind.CLONE_STATUS: {"status": lambda v: v is None or (_integer(v) and -64 <= v <= 255)},
}
#: Fields a kind may carry, and what each must be when it does.
OPTIONAL: dict[str, dict[str, Callable[[Any], bool]]] = {
    Kind.RESPONSE: {"content_type": _text(256), "bytes": lambda v: isinstance(v, bool)},
    Kind.ERROR: {"classes": _classes},
}


class ErrorPayload(TypedDict, total=False):
    """A function error as Lambda reports it (https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html):
    what awslambdaric posts from an environment, and what the world answers a caller or a destination with. Read
    from an environment it is untrusted, so its readers still turn each value into the text they show."""

    errorMessage: str
    errorType: str
    requestId: str
    stackTrace: list[str]


class XrayFault(TypedDict):
    """awslambdaric's X-Ray fault of an error (its ``make_xray_fault``): the error's type and message."""

    type: str
    message: str


class EnvironmentLimits(TypedDict, total=False):
    """An environment's limits, as its function's configuration sets them (MB of memory, MB of /tmp); a manager
    whose environment told it none (an unreadable datagram) reads them as unset."""

    memory_mb: int
    tmp_mb: int


class EnvironmentConfig(TypedDict):
    """What the template hands a new environment: its variables, task root, handler, seed, time and limits."""

    environ: dict[str, str]
    task_root: str
    handler: str
    seed: str
    now: float
    limits: EnvironmentLimits


#: One message on a channel, either way: ``t`` says its kind, and so which other fields it has (``FROM_ENVIRONMENT``
#: and ``OPTIONAL`` for an environment's, the world's own as each sender writes them; ``receive`` refuses a message
#: without one). The template's control socket carries its own kinds ("spawn", "spares", "kill", "status") and
#: answers in the same shape, with no ``t``. The functional form, as ``raise`` (an answer's exception) is a keyword.
Message = TypedDict("Message", {
    "t": str,
    # an environment's (FROM_ENVIRONMENT, OPTIONAL)
    "body": str, "content_type": str, "bytes": bool, "classes": list[str], "method": str, "url": str,
    "headers": dict[str, str], "kind": str, "args": EffectArgs, "seconds": float, "stream": str, "text": str,
    "frames": list[list[Any]], "pid": int, "status": "int | None",
    # the world's: an invocation, an answer, a restored environment's status
    "request_id": str, "event": str, "deadline_ms": int, "arn": str, "now": float, "wait": float,
    "raise": str, "message": str, "result": Any,
    # the template's control socket
    "config": EnvironmentConfig, "share_tmp": "int | None", "most": int, "pids": list[int],
    "error": "str | None", "ready": bool, "uncontained": "str | None", "why": "str | None",
}, total=False)


class ProtocolError(Exception):
    """An environment sent something the world does not accept."""


class ChannelClosed(Exception):
    """The other end closed the channel (an environment's process has ended)."""


def encode(message: Mapping[str, object]) -> bytes:
    """A control message as one datagram (the template's socket keeps message boundaries)."""
    return json.dumps(message, separators=(",", ":")).encode()


def _object(data: bytes) -> JsonObject:
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ProtocolError("a control message that is not an object")
    return message


# The control socket's datagrams come from the world's own processes (the template, its managers), never from a
# function's code, so what each is, is what its sender wrote: they are read as such, not checked field by field.
def decode(data: bytes) -> Message:
    """A control message or a template's answer."""
    return cast(Message, _object(data))


def decode_config(data: bytes) -> EnvironmentConfig:
    """The config the world hands a new environment through its door."""
    return cast(EnvironmentConfig, _object(data))


def decode_limits(data: bytes) -> EnvironmentLimits:
    """An environment's limits, as its first process tells its manager (``{}``: none told)."""
    return cast(EnvironmentLimits, _object(data))


def send(sock: socket.socket, message: Message) -> None:
    data = json.dumps(message, separators=(",", ":")).encode()
    if len(data) > MAX_FRAME:
        raise ProtocolError(f"a {message.get('t')!r} message of {len(data):,} bytes is over the "
                            f"{MAX_FRAME:,}-byte limit")
    sock.sendall(_HEADER.pack(len(data)) + data)


class TimedOut(Exception):
    """Nothing arrived before the deadline."""


def _read_exactly(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([sock], [], [], wait)[0]:
                raise TimedOut("nothing arrived in time")
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ChannelClosed("the channel closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket, *, deadline: float | None = None) -> Message:
    """The next message, as sent; ``TimedOut`` if it has not come by ``deadline`` (``time.monotonic``)."""
    (size,) = _HEADER.unpack(_read_exactly(sock, _HEADER.size, deadline))
    if size > MAX_FRAME:
        raise ProtocolError(f"a message of {size:,} bytes is over the {MAX_FRAME:,}-byte limit")
    message = loads(_read_exactly(sock, size, deadline))
    if not isinstance(message, dict) or not isinstance(message.get("t"), str):
        raise ProtocolError("a message without a kind")
    return cast(Message, message)  # a kind, at least; receive_from_environment checks an environment's fields


def loads(data: bytes | str, depth: int = MAX_DEPTH) -> Any:
    """JSON an environment sent, parsed: ``ProtocolError`` if it is not JSON, or nests deeper than ``depth``
    (``[[[[...]]]]`` a hundred thousand deep makes ``json.loads`` itself raise RecursionError)."""
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"a message that is not JSON: {str(exc)[:200]}") from None
    if not nests_within(value, depth):
        raise ProtocolError(f"a message nested more than {depth} levels deep")
    return value


def nests_within(value: Any, depth: int) -> bool:
    """True if ``value`` (parsed JSON) nests no deeper than ``depth`` levels; walked without recursion."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            if level > depth:
                return False
            stack.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return True


def send_with_fd(sock: socket.socket, message: Message, fd: int) -> None:
    """A message with a file descriptor riding on its first byte (SCM_RIGHTS)."""
    data = json.dumps(message, separators=(",", ":")).encode()
    frame = _HEADER.pack(len(data)) + data
    socket.send_fds(sock, [frame[:1]], [fd])
    sock.sendall(frame[1:])


def receive_with_fd(sock: socket.socket, *, deadline: float | None = None) -> tuple[Message, int]:
    """An environment's message sent with ``send_with_fd``: the message, and the descriptor it carried."""
    if deadline is not None and not select.select([sock], [], [], max(0.0, deadline - time.monotonic()))[0]:
        raise TimedOut("nothing arrived in time")
    first, fds, _, _ = socket.recv_fds(sock, 1, 1)
    if not first:
        raise ChannelClosed("the channel closed")
    if len(fds) != 1:
        for fd in fds:
            os.close(fd)
        raise ProtocolError("a message that should carry a channel carries none")
    try:
        header = first + _read_exactly(sock, _HEADER.size - 1, deadline)
        (size,) = _HEADER.unpack(header)
        if size > MAX_FRAME:
            raise ProtocolError(f"a message of {size:,} bytes is over the {MAX_FRAME:,}-byte limit")
        message = loads(_read_exactly(sock, size, deadline))
    except BaseException:
        os.close(fds[0])
        raise
    if (not isinstance(message, dict) or message.get("t") != Kind.CLONED
            or not FROM_ENVIRONMENT[Kind.CLONED]["pid"](message.get("pid"))):
        os.close(fds[0])
        raise ProtocolError("a channel sent without a 'cloned' message and its pid")
    return cast(Message, message), fds[0]


def receive_from_environment(sock: socket.socket, *, deadline: float | None = None) -> Message:
    """The next message of an environment, checked against ``FROM_ENVIRONMENT``."""
    message = receive(sock, deadline=deadline)
    kind = message["t"]
    fields = FROM_ENVIRONMENT.get(kind)
    if fields is None:
        raise ProtocolError(f"an unknown message kind {kind[:40]!r}")
    missing = [f for f in fields if f not in message]
    if missing:
        raise ProtocolError(f"a {kind!r} message without {', '.join(missing)}")
    named: Mapping[str, object] = message  # read by the names FROM_ENVIRONMENT gives, before they are trusted
    for name, valid in [*fields.items(), *((f, v) for f, v in OPTIONAL.get(kind, {}).items() if f in message)]:
        if not valid(named[name]):
            raise ProtocolError(f"a {kind!r} message whose {name} is {_shown(named[name])}")
    return message


def _shown(value: Any) -> str:
    """A bad field's value in a refusal: its type, and the start of its text."""
    return f"{type(value).__name__} {repr(value)[:60]}"
