"""A double-forked daemon in its own session that ignores SIGTERM/SIGHUP and renames itself: nothing of it may
outlive the run."""
import ctypes, os, signal, time


def handler(event, context):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(s, signal.SIG_IGN)
            ctypes.CDLL(None).prctl(15, b"rwh-daemon-x", 0, 0, 0)
            with open("/proc/self/comm", "w") as f:
                f.write("rwh-daemon-x")
            import subprocess
            subprocess.Popen(["sleep", "4242"])
            time.sleep(10_000)
        os._exit(0)
    return "ok"
