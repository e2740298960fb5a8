"""Which page-cache probes an environment has on a stdlib file every environment shares: cachestat(2) (Linux 6.5,
syscall 451: EPERM without write access, like mincore since 5.2), preadv2(RWF_NOWAIT) (works: the claim in
claim_page_cache_nowait.py), posix_fadvise(DONTNEED) and readahead(2) (both work, and change what the others see)."""
import ctypes, json, os

libc = ctypes.CDLL(None, use_errno=True)


def handler(event, context):
    seen = {}
    fd = os.open(json.__file__, os.O_RDONLY)
    size = os.fstat(fd).st_size
    rng = (ctypes.c_uint64 * 2)(0, 0)
    stat = (ctypes.c_uint64 * 5)()
    r = libc.syscall(451, fd, ctypes.byref(rng), ctypes.byref(stat), 0)
    seen["cachestat"] = list(stat) if r == 0 else os.strerror(ctypes.get_errno())
    try:
        os.preadv(fd, [bytearray(4096)], 0, os.RWF_NOWAIT)
        seen["rwf_nowait"] = "cached"
    except BlockingIOError:
        seen["rwf_nowait"] = "not cached"
    seen["fadvise_dontneed"] = os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED) is None
    seen["readahead"] = libc.readahead(fd, ctypes.c_int64(0), ctypes.c_size_t(size))
    os.close(fd)
    return seen
