"""1 GiB of SysV shared memory (shmget), touched through an attachment and then detached: the segment stays,
mapped by no process (its IPC namespace's), so smaps counts none of it."""
import ctypes

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
IPC_PRIVATE, IPC_CREAT = 0, 0o1000


def handler(event, context):
    size = 1 << 30
    shmid = libc.shmget(IPC_PRIVATE, ctypes.c_size_t(size), IPC_CREAT | 0o600)
    if shmid < 0:
        return f"shmget failed: errno {ctypes.get_errno()}"
    addr = libc.shmat(shmid, None, 0)
    ctypes.memset(addr, 1, size)
    libc.shmdt(ctypes.c_void_p(addr))
    return "survived with 1 GiB in a SysV segment"
