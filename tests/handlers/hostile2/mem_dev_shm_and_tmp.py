"""Fill /dev/shm (64 MB here) and 500 MB of /tmp: Lambda's /tmp is ephemeral storage, not memory."""
import errno


def _fill(path, mb):
    n = 0
    try:
        with open(path, "wb") as f:
            for _ in range(mb):
                f.write(b"x" * (1 << 20))
                n += 1
    except OSError as exc:
        return f"{n} MB then {errno.errorcode[exc.errno]}"
    return f"{n} MB"


def handler(event, context):
    return {"shm": _fill("/dev/shm/big", 200), "tmp": _fill("/tmp/big", 500)}
