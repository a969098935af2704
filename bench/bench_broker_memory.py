"""A real broker's peak memory while Kafka's own client writes gigabytes to it, and how fast
the same client reads them back from disk.

    python bench/bench_broker_memory.py                    # 256 MiB, one broker, acks=1
    python bench/bench_broker_memory.py --mib 2048         # 2 GiB
    python bench/bench_broker_memory.py --replication 3 --acks all

A cluster of real broker processes on an embedded ZooKeeper (``LocalCluster``, authentication
on): one broker, or three with ``--replication 3``.  confluent-kafka (librdkafka) produces
``--mib`` MiB of 1 KiB records to one partition through the brokers' Kafka listeners,
batched (bench/kafka_load.py); meanwhile every broker's resident memory (``VmRSS`` in
/proc/<pid>/status) is sampled every 0.5 s, and the kernel's high-water mark (``VmHWM``)
read at the end.  Then the same client reads every record back by assignment -- from disk,
since the log keeps only a sparse index in memory (impl/node/log.py) -- checking each came
once and in order.  Exit 1 if a broker's peak passed ``--bound`` MB (10^6 bytes).

Not a timed test: the figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time

import kafka_load as load

from impl.harness.cluster import LocalCluster

PROG = "bench_broker_memory"
SAMPLE_S = 0.5
MB = 10**6
TOPIC = "bench-memory"


def status_bytes(pid: int, field: str) -> int:
    """A ``kB`` field of /proc/<pid>/status, in bytes (0 once the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class RssSampler(threading.Thread):
    """Every broker's VmRSS every ``SAMPLE_S`` seconds, the peak per broker and phase; and
    each phase's true peak, the kernel's high-water mark (VmHWM), which ``switch`` reads
    and then resets (``5`` to /proc/<pid>/clear_refs), so a spike between two samples is
    still counted, and counted in its phase."""

    def __init__(self, pids: dict[int, int]) -> None:
        super().__init__(daemon=True, name="rss-sampler")
        self.pids = pids
        self.phase = "rest"
        self.sampled: dict[tuple[int, str], int] = {}
        self.hwm: dict[tuple[int, str], int] = {}
        self.samples = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            phase = self.phase
            for broker, pid in self.pids.items():
                key = (broker, phase)
                self.sampled[key] = max(self.sampled.get(key, 0), status_bytes(pid, "VmRSS"))
            self.samples += 1
            self.done.wait(SAMPLE_S)

    def switch(self, phase: str) -> None:
        """The current phase's high-water marks, read and reset; ``phase`` begins."""
        for broker, pid in self.pids.items():
            self.hwm[(broker, self.phase)] = status_bytes(pid, "VmHWM")
            try:
                with open(f"/proc/{pid}/clear_refs", "w") as f:
                    f.write("5")
            except OSError:  # not resettable here: later phases' marks include earlier ones
                pass
        self.phase = phase

    def peak(self, broker: int, phase: str | None = None) -> int:
        """The highest of the samples and the high-water marks (of one phase, or of all)."""
        return max((v for d in (self.sampled, self.hwm) for (b, p), v in d.items()
                    if b == broker and phase in (None, p)), default=0)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = load.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:6]))
    ap.add_argument("--mib", type=int, default=256, help="MiB of 1 KiB records to produce (default 256)")
    ap.add_argument("--replication", type=int, default=1, choices=(1, 3),
                    help="the partition's replication factor, and so the cluster's brokers (default 1)")
    ap.add_argument("--acks", default="1", choices=("1", "all"), help="the producer's acks (default 1)")
    ap.add_argument("--bound", type=int, default=300, help="peak RSS bound per broker in MB (default 300)")
    ap.add_argument("--data-dir", default=None, help="where the cluster's data dir goes (default: the system's temp)")
    args = ap.parse_args(argv)
    if args.mib <= 0 or args.bound <= 0:
        ap.error("--mib and --bound must be positive")
    if args.data_dir is not None and not os.path.isdir(args.data_dir):
        ap.error(f"--data-dir {args.data_dir}: not a directory")
    if load.missing_modules(["confluent_kafka"]):
        ap.error("confluent-kafka is not installed (the dev extra: pip install -e '.[dev]')")
    return args


def run(args: argparse.Namespace, cluster: LocalCluster) -> int:
    acks = -1 if args.acks == "all" else 1
    records = args.mib * load.MIB // load.RECORD_BYTES
    leader = load.create_topic(cluster, TOPIC, args.replication)
    pids = {b: p.pid for b, p in cluster.procs.items()}
    sampler = RssSampler(pids)
    sampler.start()
    try:
        time.sleep(2 * SAMPLE_S)  # the brokers' memory at rest, before the first record
        sampler.switch("produce")
        produce_s = load.produce_librdkafka(cluster, TOPIC, records, acks, load.Progress("produced", records))
        print(f"  produced {args.mib:,} MiB in {produce_s:.1f} s: {args.mib / produce_s:,.1f} MiB/s", flush=True)
        sampler.switch("consume")
        consume_s = load.consume_librdkafka(cluster, TOPIC, records, load.Progress("consumed", records))
        print(f"  consumed {args.mib:,} MiB in {consume_s:.1f} s: {args.mib / consume_s:,.1f} MiB/s", flush=True)
        sampler.switch("end")
    finally:
        sampler.done.set()
        sampler.join()
    print(f"\n{'broker':<12} {'rest':>6} {'produce':>8} {'consume':>8} {'peak':>6}   (MiB: the phase's VmHWM "
          f"or sampled VmRSS, the higher)")
    over = []
    for b in sorted(pids):
        role = f"{b} (leader)" if b == leader else str(b)
        print(f"{role:<12} " + " ".join(f"{sampler.peak(b, p) / load.MIB:>{w}.0f}"
                                        for p, w in (("rest", 6), ("produce", 8), ("consume", 8)))
              + f" {sampler.peak(b) / load.MIB:>6.0f}")
        if sampler.peak(b) > args.bound * MB:
            over.append(b)
    top = max(sampler.peak(b) for b in pids)
    print(f"\n{args.mib:,} MiB ({records:,} records of {load.RECORD_BYTES} B), replication {args.replication}, "
          f"acks={load.acks_label(acks)}: produce {args.mib / produce_s:,.1f} MiB/s, consume from disk "
          f"{args.mib / consume_s:,.1f} MiB/s; peak RSS {top / MB:,.0f} MB, "
          f"{'within' if not over else 'OVER'} the bound of {args.bound} MB "
          f"({sampler.samples} samples every {SAMPLE_S} s)")
    if over:
        print(f"{PROG}: broker {', '.join(map(str, over))} peaked over {args.bound} MB", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"{args.mib:,} MiB of {load.RECORD_BYTES} B records to one partition, replication {args.replication}, "
          f"acks={args.acks}, confluent-kafka; load average at start {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="epochal-bench-memory-", dir=args.data_dir) as d:
        cluster = LocalCluster(d, brokers=args.replication)
        try:
            cluster.start()
            return run(args, cluster)
        except (load.BenchError, TimeoutError) as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 1
        finally:
            cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
