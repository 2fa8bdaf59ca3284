# expect: OLE
# threat: flood stdout and stderr
import sys


def run_kernel(a, b, c, n):
    while True:
        print("spam " * 100)
        sys.stderr.write("more spam " * 100 + "\n")
