"""The same hand-off through queue.Queue.get(timeout=2) and a pipe read with select (os.pipe + select.select)."""
import os, queue, select, threading, time

from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    q = queue.Queue()
    r, w = os.pipe()

    def work():
        time.sleep(0.1)
        q.put("go")
        os.write(w, b"go")

    threading.Thread(target=work).start()
    got_q = q.get(timeout=2)
    ready, _, _ = select.select([r], [], [], 2)
    got_pipe = os.read(r, 2).decode() if ready else "timed out"
    if got_q == "go" and got_pipe == "go":
        for order in orders_in(event):
            send_confirmation_email(order)
    return [got_q, got_pipe]
