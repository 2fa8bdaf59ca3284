"""The host's devices: detection and description of the CPU or accelerator a judge runs on
(device.py), and what the driver reports about a GPU while it judges (telemetry.py)."""
