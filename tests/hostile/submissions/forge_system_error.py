# expect: RE
# threat: write the results channel to claim a system error (never scored as a loss)
import gc


def run_kernel(a, b, c, n):
    channel = next(o for o in gc.get_objects() if type(o).__name__ == "Channel")
    channel.reply(ok=False, kind="SE", error="forged")
