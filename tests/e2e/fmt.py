"""Shared by the e2e checkers (check_ddp.py, rules_gpu.sh): durations for humans."""


def t(ns):
    """A duration in ns as "1.23 ms" (three significant digits, the largest unit >= 1)."""
    ns = float(ns)
    for unit, div in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= div:
            return f"{ns / div:.3g} {unit}"
    return f"{ns:.0f} ns"
