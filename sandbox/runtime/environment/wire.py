"""The one channel between an execution environment and the world: framed JSON messages.

Each message is a 4-byte big-endian length and a UTF-8 JSON object with a string ``t`` (its
kind). The world reads what an environment sends as untrusted input: a frame over
``MAX_FRAME`` bytes, bytes that are not JSON, or an object of an unknown kind end that
environment's channel with ``ProtocolError``, which the runtime reports as the environment's
failure. Nothing an environment sends is executed or unpickled.
"""
from __future__ import annotations

import json
import os
import select
import socket
import struct
import time
from typing import Any

#: The largest message either side accepts: Lambda's own payload limit is 6 MB, and an AWS
#: request body is far smaller; the margin covers base64 and JSON escaping.
MAX_FRAME = 16 * 1024 * 1024
#: Real seconds an environment may compute between two requests without the world's clock seeing it.
#: Past it, all of that time counts, as it would on Lambda, toward the function's timeout and the clock
#: (DESIGN: "Time as on Lambda"). Under it, a run stays the same from machine to machine, byte for byte.
QUANTUM = 0.2
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


#: What an environment may send the world, and the fields each must carry.
FROM_ENVIRONMENT: dict[str, tuple[str, ...]] = {
    Kind.READY: (),
    Kind.NEXT: (),
    Kind.RESPONSE: ("body",),
    Kind.ERROR: ("body",),
    Kind.INIT_ERROR: ("body",),
    Kind.AWS: ("service", "op", "method", "url", "headers", "body"),
    Kind.EFFECT: ("kind", "args"),
    Kind.SLEEP: ("seconds",),
    Kind.LOG: ("stream", "text"),
    Kind.EXIT: ("frames",),
    Kind.SNAPSHOT: (),
    Kind.CLONED: ("pid",),
    Kind.CLONE_STATUS: ("status",),
}


class ProtocolError(Exception):
    """An environment sent something the world does not accept."""


class ChannelClosed(Exception):
    """The other end closed the channel (an environment's process has ended)."""


def encode(message: dict[str, Any]) -> bytes:
    """A control message as one datagram (the template's socket keeps message boundaries)."""
    return json.dumps(message, separators=(",", ":")).encode()


def decode(data: bytes) -> dict[str, Any]:
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ProtocolError("a control message that is not an object")
    return message


def send(sock: socket.socket, message: dict[str, Any]) -> None:
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


def receive(sock: socket.socket, *, deadline: float | None = None) -> dict[str, Any]:
    """The next message, as sent; ``TimedOut`` if it has not come by ``deadline`` (``time.monotonic``)."""
    (size,) = _HEADER.unpack(_read_exactly(sock, _HEADER.size, deadline))
    if size > MAX_FRAME:
        raise ProtocolError(f"a message of {size:,} bytes is over the {MAX_FRAME:,}-byte limit")
    try:
        message = json.loads(_read_exactly(sock, size, deadline))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"a message that is not JSON: {exc}") from None
    if not isinstance(message, dict) or not isinstance(message.get("t"), str):
        raise ProtocolError("a message without a kind")
    return message


def send_with_fd(sock: socket.socket, message: dict[str, Any], fd: int) -> None:
    """A message with a file descriptor riding on its first byte (SCM_RIGHTS)."""
    data = json.dumps(message, separators=(",", ":")).encode()
    frame = _HEADER.pack(len(data)) + data
    socket.send_fds(sock, [frame[:1]], [fd])
    sock.sendall(frame[1:])


def receive_with_fd(sock: socket.socket, *, deadline: float | None = None) -> tuple[dict[str, Any], int]:
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
        message = json.loads(_read_exactly(sock, size, deadline))
    except (UnicodeDecodeError, ValueError) as exc:
        os.close(fds[0])
        raise ProtocolError(f"a message that is not JSON: {exc}") from None
    except BaseException:
        os.close(fds[0])
        raise
    if not isinstance(message, dict) or message.get("t") != Kind.CLONED or not isinstance(message.get("pid"), int):
        os.close(fds[0])
        raise ProtocolError("a channel sent without a 'cloned' message and its pid")
    return message, fds[0]


def receive_from_environment(sock: socket.socket, *, deadline: float | None = None) -> dict[str, Any]:
    """The next message of an environment, checked against ``FROM_ENVIRONMENT``."""
    message = receive(sock, deadline=deadline)
    kind = message["t"]
    fields = FROM_ENVIRONMENT.get(kind)
    if fields is None:
        raise ProtocolError(f"an unknown message kind {kind[:40]!r}")
    missing = [f for f in fields if f not in message]
    if missing:
        raise ProtocolError(f"a {kind!r} message without {', '.join(missing)}")
    return message
