import json
import math

import pytest

from gpuscope._wire import (MAX_EVENT_BYTES, EventEncoder, clean_gpu, clean_job_name, counter_or_none,
                            finite_or_none)


def dumps(fields):
    return json.dumps(fields, separators=(",", ":"), allow_nan=False).encode()


@pytest.mark.parametrize("duration", [0.512, 1e-7, 3, 86400, 0.1 + 0.2, 123456.789e-3, 5e-324])
@pytest.mark.parametrize("loss", [None, 2.31, 0.0, -1e300, 7, 1e16])
def test_step_events_are_byte_for_byte_what_json_dumps_writes(duration, loss):
    encoder = EventEncoder("llama-ft", rank=3, world_size=4, local_rank=3, gpu="GPU-8f3a")
    expected = {"event": "step", "job": "llama-ft", "rank": 3, "world_size": 4, "local_rank": 3, "gpu": "GPU-8f3a",
                "time": 1718000000.25, "step": 120, "duration_s": float(duration)}
    if loss is not None:
        expected["loss"] = float(loss)
    expected["scalars"] = {"lr": 0.0003, "tokens_per_s": 12345.0}
    line = encoder.step(120, duration, loss, {"lr": 3e-4, "tokens_per_s": 12345}, time_s=1718000000.25)
    assert line == dumps(expected)


def test_epoch_events_carry_the_allocator_bytes_as_whole_numbers():
    encoder = EventEncoder("job", rank=0, gpu=2)
    allocator = {"allocated_bytes": 21474836480, "reserved_bytes": 32212254720, "peak_allocated_bytes": 30064771072}
    assert encoder.epoch_start(1, allocator) == dumps(
        {"event": "epoch_start", "job": "job", "rank": 0, "gpu": 2, "epoch": 1, **allocator})
    assert encoder.epoch_end(1, 2.05, {}) == dumps(
        {"event": "epoch_end", "job": "job", "rank": 0, "gpu": 2, "epoch": 1, "loss": 2.05})


def test_a_non_finite_loss_or_scalar_is_left_out_and_the_event_still_goes():
    line = EventEncoder("j").step(1, 0.5, float("nan"), {"lr": float("inf"), "ok": 1.5, "bad": "text"})
    assert json.loads(line) == {"event": "step", "job": "j", "rank": 0, "step": 1, "duration_s": 0.5,
                                "scalars": {"ok": 1.5}}
    assert b"NaN" not in line and b"Infinity" not in line


@pytest.mark.parametrize("step,duration", [
    (-1, 0.5), (True, 0.5), (1.5, 0.5), ("3", 0.5), (None, 0.5), (2**64, 0.5),
    (1, 0), (1, -0.1), (1, float("nan")), (1, float("inf")), (1, 86400.001), (1, None), (1, "0.5"),
])
def test_a_step_number_or_duration_the_agent_would_reject_gives_no_event(step, duration):
    assert EventEncoder("j").step(step, duration) is None


def test_scalar_names_the_protocol_forbids_are_left_out_and_at_most_32_are_kept():
    scalars = {"1st": 1, "has-dash": 2, "x" * 65: 3, "y" * 64: 4, "_ok": 5, "Ünicode": 6}
    scalars.update({f"s{i}": i for i in range(40)})
    sent = json.loads(EventEncoder("j").step(0, 1.0, None, scalars))["scalars"]
    assert "1st" not in sent and "has-dash" not in sent and "x" * 65 not in sent and "Ünicode" not in sent
    assert list(sent)[:2] == ["y" * 64, "_ok"]
    assert len(sent) == 32


def test_numbers_from_numpy_count_as_numbers():
    numpy = pytest.importorskip("numpy")
    line = EventEncoder("j").step(numpy.int64(7), numpy.float32(0.25), numpy.float64(1.5), {"lr": numpy.float32(0.5)})
    assert json.loads(line) == {"event": "step", "job": "j", "rank": 0, "step": 7, "duration_s": 0.25, "loss": 1.5,
                                "scalars": {"lr": 0.5}}


def test_job_names_lose_control_characters_and_are_cut_to_128_bytes_at_a_character_boundary():
    assert clean_job_name("  llama\tft\n ") == "llamaft"
    assert clean_job_name("\x00\x1f\x7f") is None
    assert clean_job_name("") is None
    long_name = "é" * 100  # 200 bytes of UTF-8
    cut = clean_job_name(long_name)
    assert cut == "é" * 64 and len(cut.encode()) == 128
    assert clean_job_name("a" + "é" * 100).encode() == ("a" + "é" * 63).encode()  # 127 bytes: no half character


def test_a_job_name_is_escaped_as_json_and_nothing_else_is_needed():
    encoder = EventEncoder('say "hi" \\ ünï')
    event = json.loads(encoder.step(0, 1.0))
    assert event["job"] == 'say "hi" \\ ünï'
    with pytest.raises(ValueError):
        EventEncoder("\n")


def test_gpus_are_indices_0_to_1023_or_uuids():
    assert clean_gpu(3) == 3 and clean_gpu("3") == 3
    assert clean_gpu("GPU-8f3a") == "GPU-8f3a" and clean_gpu("MIG-1/2/3") == "MIG-1/2/3"
    assert clean_gpu(1024) is None and clean_gpu(-1) is None and clean_gpu(True) is None
    assert clean_gpu("GPU\x01x") is None and clean_gpu("") is None


def test_identity_fields_out_of_range_are_left_out():
    identity = EventEncoder("j", rank=70000, world_size=0, local_rank=-1, gpu=5000).identity
    assert identity == {"job": "j", "rank": 0}


def test_helpers():
    assert finite_or_none("1.5") is None and finite_or_none(float("-inf")) is None and finite_or_none(2) == 2.0
    assert counter_or_none(False) is None and counter_or_none(0) == 0
    assert math.isfinite(finite_or_none(1e308))


def test_an_event_is_at_most_4096_bytes_or_it_is_reported_too_large_by_the_sender():
    from gpuscope._sender import EventSender

    line = EventEncoder("j" * 128).step(0, 1.0, 1.0, {("n" * 60 + f"{i:04d}"): 1.2345678901234567 for i in range(32)})
    assert len(line) <= MAX_EVENT_BYTES  # the protocol's limits keep an ordinary event well under it
    sender = EventSender(socket_path="/nonexistent/sock")
    assert not sender.send(b"{" + b" " * MAX_EVENT_BYTES + b"}")
    assert sender.too_large == 1 and sender.connect_attempts == 0
