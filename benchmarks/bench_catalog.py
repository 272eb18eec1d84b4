"""Loading every bundled cloud catalog: median wall time and memory (tracemalloc).

Exits 1 when the median is above the budget (0.15 s).

    python benchmarks/bench_catalog.py [--runs N] [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skyc.catalog import load_catalog


def load_all() -> int:
    cat = load_catalog()
    cat.load_all()
    return len(cat.clouds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--budget", type=float, default=0.15)
    args = parser.parse_args()
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        clouds = load_all()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    held = load_catalog()
    held.load_all()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    median = statistics.median(times)
    print(f"catalog load ({clouds} clouds): median {median * 1000:.1f} ms over {args.runs} runs "
          f"(min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f}); "
          f"memory {current / 2**20:.1f} MiB held, {peak / 2**20:.1f} MiB peak; "
          f"budget {args.budget * 1000:.0f} ms")
    return 0 if median <= args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
