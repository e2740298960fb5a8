"""1 GiB touched in a child process (the environment's memory is every process's)."""
import os


def handler(event, context):
    pid = os.fork()
    if pid == 0:
        hog = bytearray(1 << 30)
        for i in range(0, len(hog), 4096):
            hog[i] = 1
        os._exit(0)
    os.waitpid(pid, 0)
    return "survived"
