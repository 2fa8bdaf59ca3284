# expect: TLE
# threat: sleep past the time limit
import time


def run_kernel(a, b, c, n):
    time.sleep(3600)
