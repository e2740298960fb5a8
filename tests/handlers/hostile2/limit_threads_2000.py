"""Start 2000 threads that wait on one event (Lambda: 1,024 processes/threads per environment)."""
import threading


def handler(event, context):
    stop = threading.Event()
    started = 0
    error = None
    threads = []
    try:
        for _ in range(2000):
            t = threading.Thread(target=stop.wait)
            t.start()
            threads.append(t)
            started += 1
    except RuntimeError as exc:
        error = str(exc)
    stop.set()
    for t in threads:
        t.join()
    return {"started": started, "error": error}
