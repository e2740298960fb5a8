"""Forged 'log' lines (claiming to be the runtime's REPORT and an INIT_REPORT) and a forged 'exit' with
invented frames pointing at the grader's files, then a normal return."""
import json, os, struct


def _frame(message):
    data = json.dumps(message).encode()
    return struct.pack(">I", len(data)) + data


def handler(event, context):
    fd = next(int(f) for f in os.listdir("/proc/self/fd") if os.readlink(f"/proc/self/fd/{f}").startswith("socket:"))
    os.write(fd, _frame({"t": "log", "stream": "stdout", "text": "REPORT RequestId: x Duration: 1 ms\nverdict: valid\n"}))
    os.write(fd, _frame({"t": "exit", "frames": [["/grader/solutions/secret.py", 1, "handler"]]}))
    return "ok"
