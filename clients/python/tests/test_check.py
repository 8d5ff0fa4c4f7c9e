import json
import stat

import pytest

import gpuscope
from conftest import gpu_health, healthy_report


def test_a_healthy_agent_report_is_healthy(fake_agent):
    report = gpuscope.check()
    assert report.healthy and bool(report) and report.source == "agent"
    assert report.problems == [] and report.gpus_checked == 2
    assert fake_agent.paths() == ["/api/v1/check"]


def test_a_failed_gating_check_makes_it_unhealthy_with_the_problem_named(fake_agent):
    fake_agent.check_report = healthy_report([gpu_health(0, "GPU-a", {"ecc": True}), gpu_health(1, "GPU-b")])
    report = gpuscope.check()
    assert not report.healthy
    (problem,) = report.problems
    assert (problem.check, problem.gpu, problem.uuid) == ("ecc", 0, "GPU-a")
    assert "ecc" in str(problem) and "GPU 0" in str(problem)


def test_fail_on_is_passed_to_the_agent_and_failures_outside_it_are_warnings(fake_agent):
    fake_agent.check_report = healthy_report([gpu_health(0, "GPU-a", {"thermal": False})])
    report = gpuscope.check(fail_on=["ecc", "xid"])
    assert report.healthy and report.problems == []
    assert [w.check for w in report.warnings] == ["thermal"]
    (_, query), = fake_agent.requests
    assert query["fail_on"] == ["ecc,xid"]


def test_raise_on_failure_raises_gpu_unhealthy_with_the_report(fake_agent):
    fake_agent.check_report = healthy_report([gpu_health(0, "GPU-a", {"xid": True})])
    with pytest.raises(gpuscope.GpuUnhealthy, match="xid") as raised:
        gpuscope.check(raise_on_failure=True)
    assert raised.value.report.problems[0].check == "xid"
    assert gpuscope.check(raise_on_failure=False).healthy is False  # asked not to raise: it does not


def test_a_broken_gpu_given_to_another_job_does_not_stop_this_one(fake_agent, fake_torch):
    fake_torch.uuid = "GPU-b"  # this process trains on GPU-b
    fake_agent.check_report = healthy_report([gpu_health(0, "GPU-a", {"ecc": True}), gpu_health(1, "GPU-b")])
    report = gpuscope.check()
    assert report.healthy
    assert [(w.check, w.uuid) for w in report.warnings] == [("ecc", "GPU-a")]
    assert not gpuscope.check(all_gpus=True).healthy


def test_a_gpu_that_does_not_answer_fails_whatever_fail_on_says(fake_agent):
    fake_agent.check_report = healthy_report([gpu_health(0, "GPU-a", up=False)])
    report = gpuscope.check(fail_on="thermal")
    assert not report.healthy and report.problems[0].check == "down"


def test_an_unwrapped_body_and_an_error_status_with_a_report_are_read_too(fake_agent):
    fake_agent.wrap = False
    fake_agent.check_status = 503
    fake_agent.check_report = healthy_report([gpu_health(0, "GPU-a", {"remap": True})])
    report = gpuscope.check()
    assert report.source == "agent" and not report.healthy and report.problems[0].check == "remap"


def fake_binary(directory, stdout, exit_code=0):
    """A `gpuscope` on PATH that records its arguments and prints `stdout`."""
    directory.mkdir(exist_ok=True)
    (directory / "stdout").write_text(stdout + "\n")
    script = directory / "gpuscope"
    script.write_text(  # shell builtins only: PATH holds nothing else in these tests
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > "{directory}/args"\n'
        f'while IFS= read -r line; do printf "%s\\n" "$line"; done < "{directory}/stdout"\n'
        f"exit {exit_code}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return directory


def test_without_an_agent_the_gpuscope_binary_on_path_is_asked(tmp_path, monkeypatch):
    report_json = json.dumps(healthy_report([gpu_health(0, "GPU-a", {"ecc": True})]))
    bin_dir = fake_binary(tmp_path / "empty-bin", report_json, exit_code=1)
    report = gpuscope.check(fail_on="ecc,xid")
    assert report.source == "cli" and not report.healthy and report.problems[0].check == "ecc"
    assert (bin_dir / "args").read_text().split() == ["check", "--format", "json", "--fail-on", "ecc,xid"]


def test_a_gpuscope_without_the_check_verb_is_passed_over_and_not_asked_again(tmp_path):
    bin_dir = fake_binary(tmp_path / "empty-bin", "gpuscope: unknown command 'check'", exit_code=2)
    report = gpuscope.check()
    assert report.source is None and report.healthy
    (bin_dir / "args").unlink()
    gpuscope.check()
    assert not (bin_dir / "args").exists()


def test_with_nothing_to_ask_the_report_is_healthy_and_says_nothing_was_checked():
    report = gpuscope.check(raise_on_failure=True)
    assert report.healthy and report.source is None and report.gpus_checked == 0 and report.problems == []


def test_the_monitor_checks_against_its_own_agent(fake_agent, monkeypatch):
    monkeypatch.setenv("GPUSCOPE_URL", "http://127.0.0.1:9")  # not the monitor's
    monitor = gpuscope.Monitor("j", url=fake_agent.url)
    assert monitor.check().source == "agent"
