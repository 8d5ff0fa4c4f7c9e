"""`pip install ./clients/python` without a network: into a fresh venv that sees the system's
setuptools and wheel (Debian: python3-setuptools, python3-wheel, python3-venv), with
--no-build-isolation (an isolated build would fetch setuptools from an index) and --no-index."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import PACKAGE_ROOT


def missing_build_tools():
    probe = subprocess.run([sys.executable, "-c", "import venv, ensurepip, setuptools, wheel"], capture_output=True,
                           check=False)
    return probe.returncode != 0


@pytest.mark.skipif(missing_build_tools(), reason="needs venv, ensurepip, setuptools and wheel for this Python "
                                                  "(Debian: python3-venv python3-setuptools python3-wheel)")
def test_pip_installs_the_package_offline_into_a_venv_and_it_imports(tmp_path):
    source = tmp_path / "source"
    # A copy: setuptools builds in the source tree (build/, *.egg-info), which must stay clean.
    shutil.copytree(PACKAGE_ROOT, source, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True,
                   capture_output=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONPATH": ""})
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}/usr/bin:/bin"
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-build-isolation",
                              str(source)], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert install.returncode == 0, install.stdout + install.stderr
    smoke = subprocess.run(
        [str(venv / "bin" / "python"), "-c", textwrap.dedent("""
            import gpuscope, os
            assert gpuscope.__file__.startswith(os.environ["VIRTUAL_ENV_DIR"]), gpuscope.__file__
            monitor = gpuscope.Monitor("install-test", socket_path="/nonexistent/events.sock")
            with monitor.step():
                pass
            assert monitor.stats()["unreachable"] == 1
            assert gpuscope.log_gpu_metrics(lambda name, value, step: None, 0) == {}
            print(gpuscope.__version__)
        """)],
        env={**env, "VIRTUAL_ENV_DIR": str(venv), "GPUSCOPE_URL": "http://127.0.0.1:9",
             "GPUSCOPE_NVML_LIB": "/nonexistent.so"},
        cwd=str(tmp_path), capture_output=True, text=True, timeout=60, check=False)
    assert smoke.returncode == 0, smoke.stderr
    assert smoke.stdout.strip() == "0.1.0"
    typed = list((venv / "lib").glob("python3*/site-packages/gpuscope/py.typed"))
    assert typed, "py.typed is installed"
