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
