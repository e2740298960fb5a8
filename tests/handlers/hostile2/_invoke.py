"""Run one handler once in a Sandbox and print its result (a helper for red-team recon).
usage: _invoke.py file.py:handler [contained] [memory_mb=N] [timeout=S]"""
import json, sys, time
from sandbox import Sandbox
handler = sys.argv[1]
opts = dict(a.split("=") for a in sys.argv[2:] if "=" in a)
kw = {"isolation": "contained"} if "contained" in sys.argv[2:] else {}
fkw = {}
if "memory_mb" in opts: fkw["memory_mb"] = int(opts["memory_mb"])
if "timeout" in opts: fkw["timeout"] = float(opts["timeout"])
t0 = time.monotonic()
with Sandbox(seed=0, **kw) as sb:
    fn = sb.function(handler, **fkw)
    for i in range(int(opts.get("times", 1))):
        inv = fn.invoke(json.loads(opts.get("event", "{}")))
        r = inv.result
        print(json.dumps({"outcome": inv.outcome, "result": (r if not isinstance(r, (str, bytes)) or len(r) < 300 else f"<{len(r)} chars>"), "error": (getattr(inv, "error_text", None) or "")[:300]}, default=str)[:3000])
print("real seconds", round(time.monotonic() - t0, 2))
