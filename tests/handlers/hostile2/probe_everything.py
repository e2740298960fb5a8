"""Recon: what an environment can see of itself and the machine (fds, ids, mounts, caps, sysctls)."""
import os


def _read(path, n=4000):
    try:
        with open(path) as f:
            return f.read(n)
    except OSError as exc:
        return f"<{type(exc).__name__}: {exc.errno}>"


def handler(event, context):
    seen = {}
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError as exc:
            fds[fd] = str(exc)
    seen["fds"] = fds
    seen["ids"] = (os.getuid(), os.getgid(), os.getpid(), os.getppid(), os.getpgrp(), os.getsid(0))
    seen["status"] = [l for l in _read("/proc/self/status").splitlines()
                      if l.split(":")[0] in ("CapEff", "CapPrm", "CapBnd", "Seccomp", "NoNewPrivs", "Threads")]
    seen["uid_map"] = _read("/proc/self/uid_map")
    seen["mounts"] = _read("/proc/self/mounts", 3000)
    seen["hostname"] = os.uname().nodename
    seen["boot_id"] = _read("/proc/sys/kernel/random/boot_id")
    seen["ns_last_pid"] = _read("/proc/sys/kernel/ns_last_pid")
    seen["userns"] = _read("/proc/sys/user/max_user_namespaces")
    seen["pids"] = sorted(p for p in os.listdir("/proc") if p.isdigit())
    seen["pid1_cmd"] = _read("/proc/1/cmdline")
    seen["loadavg"] = _read("/proc/loadavg")
    seen["cwd"] = os.getcwd()
    seen["dev"] = sorted(os.listdir("/dev"))[:60]
    return seen
