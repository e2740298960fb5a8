"""1 GiB touched in a child that made itself non-dumpable first (its /proc files become root's)."""
import ctypes, os, time


def handler(event, context):
    pid = os.fork()
    if pid == 0:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
        hog = bytearray(1 << 30)
        for i in range(0, len(hog), 4096):
            hog[i] = 1
        os._exit(0)
    os.waitpid(pid, 0)
    return "survived"
