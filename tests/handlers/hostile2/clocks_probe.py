"""Which clocks are the world's? time.time, datetime, clock_gettime(REALTIME/MONOTONIC/BOOTTIME), localtime,
uuid1, a new file's mtime, /proc/uptime, after a virtual sleep of 100 s."""
import datetime, os, time, uuid


def _all():
    with open("/tmp/stamp", "w") as f:
        f.write("x")
    return {"time": time.time(), "datetime": datetime.datetime.now(datetime.timezone.utc).timestamp(),
            "clock_realtime": time.clock_gettime(time.CLOCK_REALTIME),
            "clock_monotonic": time.clock_gettime(time.CLOCK_MONOTONIC),
            "clock_boottime": time.clock_gettime(time.CLOCK_BOOTTIME), "monotonic": time.monotonic(),
            "mktime_localtime": time.mktime(time.localtime()), "uuid1": (uuid.uuid1().time - 0x01B21DD213814000) / 1e7,
            "file_mtime": os.stat("/tmp/stamp").st_mtime, "uptime": float(open("/proc/uptime").read().split()[0])}


def handler(event, context):
    a = _all()
    time.sleep(100)
    b = _all()
    return {k: [round(a[k], 1), round(b[k] - a[k], 1)] for k in a}
