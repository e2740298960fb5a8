"""Kernel surfaces a student could reach: io_uring_setup, userfaultfd, /dev/kvm, /dev/fuse, /dev/kmsg,
/dev/loop-control, bpf, perf_event_open, the x32 ABI, keyctl, and the global counters of /proc."""
import ctypes, os

libc = ctypes.CDLL(None, use_errno=True)


def _sys(n, *a):
    r = libc.syscall(n, *a)
    return r if r >= 0 else os.strerror(ctypes.get_errno())


def _open(p):
    try:
        os.close(os.open(p, os.O_RDWR))
        return "opened"
    except OSError as exc:
        return exc.strerror


def handler(event, context):
    params = ctypes.create_string_buffer(120)
    seen = {"io_uring_setup": _sys(425, 4, params), "userfaultfd": _sys(323, 0),
            "bpf": _sys(321, 0, None, 0), "perf_event_open": _sys(298, None, 0, -1, -1, 0),
            "keyctl": _sys(250, 0, 0), "x32_getpid": _sys(0x40000000 | 39),
            "flock": _sys(73, 0, 2), "unshare_cgroup": _sys(272, 0x02000000)}
    for dev in ("/dev/kvm", "/dev/fuse", "/dev/kmsg", "/dev/loop-control", "/dev/loop0", "/dev/net/tun", "/dev/tty0", "/dev/console", "/dev/vda", "/dev/hwrng", "/dev/cpu_dma_latency"):
        seen[dev] = _open(dev)
    for p in ("/proc/sys/fs/file-nr", "/proc/loadavg", "/proc/sys/kernel/random/boot_id", "/sys/fs/cgroup/memory/memory.usage_in_bytes", "/proc/sys/fs/inotify/max_user_watches"):
        try:
            seen[p] = open(p).read().strip()[:80]
        except OSError as exc:
            seen[p] = exc.strerror
    return seen
