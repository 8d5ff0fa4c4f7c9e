"""The ctypes NVML path against gpuscope's simulated libnvidia-ml.so.1 (a driver, not a mock).

Each test runs in a child interpreter: the simulator reads its scenario when NVML starts, and a
process loads one NVML library once.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import PACKAGE_ROOT, REPOSITORY_ROOT, closed_port_url, simulated_nvml

SIM = simulated_nvml()
pytestmark = pytest.mark.skipif(
    SIM is None, reason="gpuscope's simulated NVML is not built (build/sim/libnvidia-ml.so.1; set GPUSCOPE_SIM_LIB)")

ECC_SCENARIO = REPOSITORY_ROOT / "scenarios" / "ecc.yaml"


def run(code, scenario=None, at_s=None, **environ):
    """Runs `code` in a child interpreter against the simulator; returns what it printed as JSON."""
    env = {
        "PATH": "/nonexistent",
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": os.pathsep.join([str(PACKAGE_ROOT), str(PACKAGE_ROOT / "tests")]),
        "GPUSCOPE_NVML_LIB": str(SIM),
        "GPUSCOPE_URL": closed_port_url(),
        "GPUSCOPE_EVENTS_SOCKET": "/nonexistent/events.sock",
        "GPUSCOPE_SIM_QUIET": "1",
    }
    if scenario is not None:
        env["GPUSCOPE_SIM_SCENARIO"] = str(scenario)
    if at_s is not None:
        env["GPUSCOPE_SIM_TIME"] = str(at_s)
    env.update(environ)
    finished = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                              text=True, timeout=60, check=False)
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout)


def test_utilization_temperature_and_memory_come_back_plausible():
    gpus = run("""
        import json
        from gpuscope._nvml import nvml
        library = nvml()
        out = []
        for handle in library.all_handles():
            out.append({"index": library.index(handle), "uuid": library.uuid(handle), "name": library.name(handle),
                        "utilization": library.utilization(handle), "temperature": library.temperature(handle),
                        "memory": library.memory(handle)})
        print(json.dumps(out))
    """, at_s=600)
    assert len(gpus) >= 1
    for position, gpu in enumerate(gpus):
        assert gpu["index"] == position and gpu["uuid"].startswith("GPU-") and gpu["name"]
        busy, memory_busy = gpu["utilization"]
        assert 0 <= busy <= 100 and 0 <= memory_busy <= 100
        assert 15 <= gpu["temperature"] <= 110
        total, free, used = gpu["memory"]
        assert total >= 1 << 30 and used <= total and free <= total
        assert abs(total - (free + used)) <= total // 20  # the driver's reserve aside, total = free + used


def test_cuda_visible_devices_maps_cuda_numbers_to_the_physical_gpu():
    uuids = run("""
        import json
        from gpuscope._nvml import nvml
        library = nvml()
        print(json.dumps([library.uuid(handle) for handle in library.all_handles()]))
    """)
    if len(uuids) < 4:
        pytest.skip("the built-in scenario has fewer than 4 GPUs")
    mapping = """
        import json
        from gpuscope._devices import process_gpu, visible_devices
        print(json.dumps([process_gpu(ordinal).uuid for ordinal in range(len(visible_devices()))]))
    """
    assert run(mapping, CUDA_VISIBLE_DEVICES="3,1") == [uuids[3], uuids[1]]
    assert run(mapping, CUDA_VISIBLE_DEVICES=f"{uuids[2]},{uuids[0][:12]}") == [uuids[2], uuids[0]]
    assert run(mapping, CUDA_VISIBLE_DEVICES="2,bogus,3") == [uuids[2]]  # CUDA stops at the first bad entry


def test_log_gpu_metrics_logs_the_four_keys_for_the_current_device():
    figures = run("""
        import json, sys
        from conftest import FakeTorch
        torch = FakeTorch(device=0)
        sys.modules["torch"] = torch.module
        import gpuscope
        from gpuscope._nvml import nvml
        library = nvml()
        handle = library.handle_by_index(2)
        logged = []
        gpuscope.log_gpu_metrics(lambda name, value, step: logged.append([name, value, step]), 5)
        print(json.dumps({"logged": logged, "utilization": library.utilization(handle)[0],
                          "temperature": library.temperature(handle)}))
    """, at_s=900, CUDA_VISIBLE_DEVICES="2")
    logged = {name: value for name, value, step in figures["logged"]}
    assert sorted(logged) == ["gpu/memory_allocated_mb", "gpu/memory_reserved_mb", "gpu/temperature_celsius",
                              "gpu/utilization_percent"]
    assert logged["gpu/memory_allocated_mb"] == 3072.0 and logged["gpu/memory_reserved_mb"] == 4096.0
    assert logged["gpu/utilization_percent"] == figures["utilization"]  # the time is frozen: the same reading
    assert logged["gpu/temperature_celsius"] == figures["temperature"]
    assert {step for _, _, step in figures["logged"]} == {5}


CHECK = """
    import json, gpuscope
    report = gpuscope.check({fail_on!r}, all_gpus={all_gpus!r})
    print(json.dumps({{"healthy": report.healthy, "source": report.source, "checked": report.gpus_checked,
                      "problems": [[p.check, p.gpu] for p in report.problems],
                      "warnings": [[p.check, p.gpu] for p in report.warnings]}}))
"""


def check(at_s, fail_on=None, all_gpus=False, **environ):
    return run(CHECK.format(fail_on=fail_on, all_gpus=all_gpus), ECC_SCENARIO, at_s, **environ)


def test_the_minimal_check_passes_before_the_ecc_scenarios_double_bit_errors():
    assert check(30) == {"healthy": True, "source": "nvml", "checked": 2, "problems": [], "warnings": []}


def test_a_double_bit_ecc_error_fails_the_minimal_check():
    # ecc.yaml: GPU 1 (V100) has a double-bit error at 2m, GPU 0 (H100) at 3m.
    assert check(150) == {"healthy": False, "source": "nvml", "checked": 2, "problems": [["ecc", 1]],
                          "warnings": []}
    assert check(200)["problems"] == [["ecc", 0], ["ecc", 1]]


def test_ecc_outside_fail_on_is_a_warning():
    report = check(150, fail_on="xid")
    assert report["healthy"] and report["warnings"] == [["ecc", 1]]


def test_only_the_gpus_the_process_may_use_decide():
    assert check(150, CUDA_VISIBLE_DEVICES="0")["healthy"]
    assert not check(150, CUDA_VISIBLE_DEVICES="1")["healthy"]
    assert not check(150, all_gpus=True, CUDA_VISIBLE_DEVICES="0")["healthy"]


def test_raise_on_failure_raises_gpu_unhealthy():
    outcome = run("""
        import json, gpuscope
        try:
            gpuscope.check(raise_on_failure=True)
            print(json.dumps("no exception"))
        except gpuscope.GpuUnhealthy as error:
            print(json.dumps(str(error)))
    """, ECC_SCENARIO, 150)
    assert outcome.startswith("gpuscope check (nvml): ecc: GPU 1")


def gpuscope_binary():
    """The gpuscope binary with the check verb: $GPUSCOPE_BIN (CTest passes it), else the build tree's."""
    explicit = os.environ.get("GPUSCOPE_BIN")
    path = explicit or str(REPOSITORY_ROOT / "build" / "gpuscope")
    if not os.access(path, os.X_OK):
        return None
    probe = subprocess.run([path, "check", "--help"], capture_output=True, check=False)
    return path if probe.returncode == 0 else None


def test_without_an_agent_the_real_gpuscope_check_answers_and_its_report_is_read(tmp_path):
    binary = gpuscope_binary()
    if binary is None:
        pytest.skip("no gpuscope binary with the check verb (build it, or set GPUSCOPE_BIN)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "gpuscope"  # the real binary, on the simulated ECC node, recording its arguments
    wrapper.write_text("#!/bin/sh\n"
                       f'printf "%s\\n" "$@" > "{tmp_path}/args"\n'
                       f'exec "{binary}" "$@" --simulate="{ECC_SCENARIO}"\n')
    wrapper.chmod(0o755)
    outcome = run("""
        import json, sys
        from conftest import FakeTorch
        torch = FakeTorch(initialized=False)
        torch.module.version = type("version", (), {"cuda": "12.4"})
        sys.modules["torch"] = torch.module
        import gpuscope
        report = gpuscope.check("ecc,remap", all_gpus=True)
        print(json.dumps({"healthy": report.healthy, "source": report.source, "checked": report.gpus_checked,
                          "problems": sorted([p.check, p.gpu] for p in report.problems)}))
    """, None, 150, PATH=str(bin_dir), GPUSCOPE_NVML_LIB="/nonexistent/libnvidia-ml.so.1",
        GPUSCOPE_SIM_LIB=str(SIM))
    assert outcome == {"healthy": False, "source": "cli", "checked": 2, "problems": [["ecc", 1], ["remap", 1]]}
    assert (tmp_path / "args").read_text().split() == ["check", "--format", "json", "--fail-on", "ecc,remap",
                                                       "--cuda-runtime", "12.4"]
