"""A CUDA event stand-in for the GPU-path tests on the CPU: records host time, so elapsed_time is real."""
import time


class FakeEvent:
    def __init__(self, enable_timing=False):
        self.enable_timing = enable_timing
        self.at = None

    def record(self, stream=None):
        self.at = time.perf_counter()

    def synchronize(self):
        return None

    def elapsed_time(self, end):
        return (end.at - self.at) * 1000.0
