"""A Jupyter kernel that ran a world ends at once when asked: every "Restart Kernel" waits for it.

It took 2.6 s: ipykernel sends SIGTERM to the children in its process group and waits until none is
left, and the warm template, killed so, stayed a zombie (the world reaps it at exit, after that wait),
until jupyter_client gave up at 2.5 s and killed the kernel. Then Python's collector walked every
object moto and botocore left at exit. ``make bench`` measures the time itself at the course's load.
"""
import time

import pytest
from jupyter_client.manager import start_new_kernel

from conftest import ROOT

RUN = """
from sandbox import run_scenario
from sandbox.runtime.environment.template_process import Template
result = run_scenario("concurrent-claims", "../examples/read_then_write.py:handler", seed=1)
assert result.history and Template._instances, "the run used the template's environments"
"""

@pytest.mark.notebook
def test_a_kernel_that_ran_a_scenario_ends_by_itself_at_once_when_asked():
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(ROOT / "notebooks"))
    try:
        reply = kc.execute_interactive(RUN, timeout=120, output_hook=lambda msg: None)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
    process = km.provisioner.process
    started = time.perf_counter()
    km.shutdown_kernel(now=False)
    took = time.perf_counter() - started
    # No wall-clock bound here (make bench measures the time at the course's load): a kernel still there half-way
    # through jupyter_client's wait (2.5 s of 5) is sent SIGTERM, and at its end SIGKILL; either way its status is
    # the signal's, not 0.
    assert process.returncode == 0, f"the kernel was killed (status {process.returncode}) after {took:.2f} s"
