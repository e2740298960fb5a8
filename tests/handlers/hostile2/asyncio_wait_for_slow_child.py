"""A correct pattern: give a slow helper program (sleep 10) half a second with asyncio.wait_for, kill it on
timeout, then send the email. On Lambda this returns after ~0.5 s, well inside a 3 s timeout."""
import asyncio

from sandbox import orders_in, send_confirmation_email


async def _helper():
    proc = await asyncio.create_subprocess_exec("sleep", "10")
    try:
        await asyncio.wait_for(proc.wait(), timeout=0.5)
        return "helper finished"
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        return "helper timed out"


def handler(event, context):
    said = asyncio.run(_helper())
    for order in orders_in(event):
        send_confirmation_email(order)
    return said
