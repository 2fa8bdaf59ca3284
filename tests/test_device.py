from judge.device import DeviceInfo, cuda_arch, detect, queue_device, visible_device_env


def test_cpu_device_has_a_cache_size_for_the_flush():
    cpu = detect("cpu")
    assert cpu.kind == "cpu" and cpu.cache_bytes > 0 and cpu.flush_bytes == 2 * cpu.cache_bytes


def test_queue_names_and_visibility():
    h200 = DeviceInfo("cuda", "cuda:3", "NVIDIA H200", 60 * 2**20, "sm_90a")
    assert queue_device(h200) == "cuda.h200" and queue_device(detect("cpu")) == "cpu"
    assert visible_device_env(h200) == ({"CUDA_VISIBLE_DEVICES": "3"}, "cuda:0")
    assert visible_device_env(detect("cpu")) == ({}, "cpu")


def test_cuda_arch_names():
    assert cuda_arch(9, 0) == "sm_90a" and cuda_arch(8, 0) == "sm_80"


def test_a_metax_card_is_detected_through_the_maca_torch_build(monkeypatch):
    """No MetaX card here: torch.cuda answers as the MACA build of torch would on a C500."""
    import types

    import pytest
    import torch

    from judge.device import DeviceUnavailable

    props = types.SimpleNamespace(name="MetaX C500", L2_cache_size=8 * 2**20)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props)
    maca = detect("maca:1")
    assert (maca.kind, maca.torch_name, maca.arch, maca.flush_bytes) == (
        "maca", "cuda:1", "xcore1000", 16 * 2**20)
    assert queue_device(maca) == "maca.c500"
    assert visible_device_env(maca) == ({"CUDA_VISIBLE_DEVICES": "1", "MACA_VISIBLE_DEVICES": "1"},
                                        "cuda:0")
    props.name = "NVIDIA H200"  # an NVIDIA card is not taken for a MetaX one
    with pytest.raises(DeviceUnavailable, match="not a MetaX card"):
        detect("maca")
    monkeypatch.setenv("KJUDGE_MACA", "1")
    assert detect("maca").kind == "maca"


def test_no_maca_device_without_the_maca_torch_build():
    import pytest
    import torch

    from judge.device import DeviceUnavailable

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    with pytest.raises(DeviceUnavailable, match="MACA build of torch"):
        detect("maca")


def test_the_flops_peak_follows_the_problems_precision():
    h200 = DeviceInfo("cuda", "cuda:0", "NVIDIA H200", 60 * 2**20, "sm_90a", 4800.0, 989.0)
    assert h200.peak_tflops_for("fp16") == 989.0 and h200.peak_tflops_for("int8") == 1978.0
    assert round(h200.peak_tflops_for("fp32"), 1) == 61.8
    assert detect("cpu").peak_tflops_for("fp32") is None
