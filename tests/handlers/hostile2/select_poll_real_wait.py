"""select, poll and epoll with 2 s timeouts on an idle pipe: each waits 2 real seconds (6 s in all, timeout 3 s)."""
import os, select


def handler(event, context):
    r, w = os.pipe()
    select.select([r], [], [], 2)
    p = select.poll(); p.register(r); p.poll(2000)
    e = select.epoll(); e.register(r); e.poll(2)
    return "waited 6 s"
