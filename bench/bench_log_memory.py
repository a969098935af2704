"""Peak memory of a partition log against the data written, and consume throughput from disk,
side by side with main's log (which kept every record in memory).

    python bench/bench_log_memory.py              # 200 MiB of 1 KiB records
    python bench/bench_log_memory.py --mib 2048   # the full 2 GiB
    python bench/bench_log_memory.py --main none  # this tree only

Each side runs in a fresh process with its own tree on ``PYTHONPATH``: it produces ``--mib``
MiB of 1 KiB records to one partition through the call the broker's produce path makes
(``PartitionLog.append_batch``, ``--batch`` records a request), then consumes them back as a
consumer fetch does (``read`` of 1000 records at a time, from disk), and reports its peak RSS
(the kernel's high-water mark, ``VmHWM``) against ``--bound``.  Main's tree is
``git archive`` of ``--main`` (a commit; ``main`` by default) unpacked in a temporary
directory.  Not a timed test: figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, tempfile, time
from pathlib import Path
from impl.node.log import PartitionLog

def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
    return 0

mib, batch = int(sys.argv[1]), int(sys.argv[2])
total = mib * 1024
filler = b"v" * 1020
with tempfile.TemporaryDirectory() as tmp:
    log = PartitionLog.open(Path(tmp) / "t-0")
    start_rss = rss("VmRSS:")
    t0 = time.perf_counter()
    for base in range(0, total, batch):
        log.append_batch(0, [i.to_bytes(4, "big") + filler for i in range(base, min(total, base + batch))])
    produce_s = time.perf_counter() - t0
    log.set_hw(log.leo)
    t0 = time.perf_counter()
    offset, read = 0, 0
    while offset < log.leo:
        got = log.read(offset, 1000)
        read += sum(len(r.value) for r in got)
        offset = got[-1].offset + 1
    consume_s = time.perf_counter() - t0
    print(json.dumps({"records": log.leo, "start_rss": start_rss, "peak_rss": rss("VmHWM:"),
                      "produce_mib_s": mib / produce_s, "consume_mib_s": read / 2**20 / consume_s}))
    log.close()
"""


def run(tree: Path, mib: int, batch: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(mib), str(batch)], env=env, cwd=tree,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{tree}: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main_tree(commit: str, into: Path) -> Path:
    """``commit``'s tree (the packages a log needs), unpacked from ``git archive``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "impl", "traces"],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        raise RuntimeError(f"git archive {commit}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def row(name: str, r: dict[str, float], bound: int) -> str:
    peak = r["peak_rss"] / 2**20
    verdict = "within" if r["peak_rss"] <= bound * 2**20 else "OVER"
    return (f"{name:<10} {int(r['records']):>9} {r['start_rss'] / 2**20:>9.0f} {peak:>9.0f}  "
            f"{verdict:<6} {r['produce_mib_s']:>10.1f} {r['consume_mib_s']:>10.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=200, help="MiB of 1 KiB records to write (default 200)")
    ap.add_argument("--batch", type=int, default=100, help="records per append (a produce request)")
    ap.add_argument("--bound", type=int, default=300, help="peak RSS bound in MB (default 300)")
    ap.add_argument("--main", default="main", help="the commit to compare with ('none': skip)")
    args = ap.parse_args()
    if args.mib <= 0 or args.batch <= 0:
        print("bench_log_memory: --mib and --batch must be positive", file=sys.stderr)
        return 2
    print(f"{args.mib} MiB of 1 KiB records, {args.batch} a batch; peak RSS bound {args.bound} MB")
    print(f"{'log':<10} {'records':>9} {'rss0 MiB':>9} {'peak MiB':>9}  {'bound':<6} "
          f"{'prod MiB/s':>10} {'cons MiB/s':>10}")
    try:
        print(row("on disk", run(ROOT, args.mib, args.batch), args.bound), flush=True)
        if args.main != "none":
            with tempfile.TemporaryDirectory() as tmp:
                print(row(args.main[:10], run(main_tree(args.main, Path(tmp)), args.mib, args.batch),
                          args.bound))
    except RuntimeError as exc:
        print(f"bench_log_memory: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
