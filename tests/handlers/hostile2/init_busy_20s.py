"""20 real seconds of computing at import (Lambda's init phase has 10 s: the init is retried in the invoke phase
within the function's timeout, then the invocation fails)."""
import time as _t

_end = _t.monotonic() + 20
_n = 0
while _t.monotonic() < _end:
    _n += 1


def handler(event, context):
    return "inited"
