"""asyncio.sleep(0.2) raced with a real child (sleep 2): when the nap ends, has the child ended too, and how much
time has the handler's clock seen? On Lambda: 0.2 s, child still running."""
import asyncio, time


async def _race():
    t0 = time.monotonic()
    proc = await asyncio.create_subprocess_exec("sleep", "2")
    waiter = asyncio.create_task(proc.wait())
    await asyncio.sleep(0.2)
    seen = {"after_nap": round(time.monotonic() - t0, 2), "child_running": proc.returncode is None}
    waiter.cancel()
    if proc.returncode is None:
        proc.kill()
    await proc.wait()
    return seen


def handler(event, context):
    return asyncio.run(_race())
