"""A fork bomb: every process forks until the kernel refuses, and each child sleeps 300 s.
It must stay inside the environment (RLIMIT_NPROC counts per user namespace) and leave nothing behind."""
import os, time


def handler(event, context):
    made = 0
    for _ in range(5000):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                while True:
                    try:
                        os.fork()
                    except OSError:
                        break
                time.sleep(300)
            finally:
                os._exit(0)
        made += 1
    return {"forked": made}
