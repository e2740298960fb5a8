"""asyncio: a subprocess (sleep 1) raced with asyncio.sleep(0.2) in asyncio.wait(FIRST_COMPLETED): on Lambda
asyncio.sleep wins; the loser is cancelled and the subprocess killed."""
import asyncio

from sandbox import orders_in, send_confirmation_email


async def _race():
    proc = await asyncio.create_subprocess_exec("sleep", "1")
    waiter = asyncio.create_task(proc.wait())
    nap = asyncio.create_task(asyncio.sleep(0.2))
    done, pending = await asyncio.wait({waiter, nap}, return_when=asyncio.FIRST_COMPLETED)
    for p in pending:
        p.cancel()
    winner = "sleep won" if nap in done else "child won"
    if proc.returncode is None:
        proc.kill()
    await proc.wait()
    try:
        await asyncio.wait_for((await asyncio.create_subprocess_exec("sleep", "1")).wait(), timeout=0.2)
        wait_for = "child finished within 0.2 s"
    except asyncio.TimeoutError:
        wait_for = "timed out"
    return winner, wait_for


def handler(event, context):
    said = asyncio.run(_race())
    for order in orders_in(event):
        send_confirmation_email(order)
    return said
