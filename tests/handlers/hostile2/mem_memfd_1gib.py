"""1 GiB in a memfd (written, never mapped): shmem pages no process maps, so no smaps_rollup counts them.
On Lambda the microVM has the function's memory and nothing more: a 128 MB function is Runtime.OutOfMemory."""
import os


def handler(event, context):
    fd = os.memfd_create("hoard")
    chunk = b"x" * (1 << 20)
    for _ in range(1024):
        os.write(fd, chunk)
    return f"survived with {os.fstat(fd).st_size >> 20} MB in a memfd"
