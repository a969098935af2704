"""Real Kafka's jars, resolved once from Maven Central and cached outside the repository.

:func:`fetch` runs Maven on this package's ``pom.xml`` (``dependency:copy-dependencies``)
into ``<cache>/kafka-<version>/lib`` and writes ``classpath.txt`` there last, so a cache
with that file is complete: the next call reads it and runs nothing.  The cache is
``$EPOCHAL_CACHE`` or ``~/.cache/epochal``.  The cache also records the SHA-256 of the
``pom.xml`` it was resolved from (``pom.sha256``): a pom that has changed since (a
dependency added) resolves again.  Every failure -- no ``mvn``, no ``java``,
an unresolvable version, no network -- is one :class:`KafkaFetchError` line.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_VERSION = "3.9.2"
"""The newest 3.9.x (the last release line with ZooKeeper mode) Maven Central serves."""

POM = Path(__file__).with_name("pom.xml")
MANIFEST = "classpath.txt"
POM_DIGEST = "pom.sha256"
MAVEN_TIMEOUT_S = 900.0
VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class KafkaFetchError(RuntimeError):
    """Kafka's jars could not be resolved: the message says what failed, in one line."""


@dataclass(frozen=True)
class KafkaJars:
    """A resolved Kafka: its version and the jars of its runtime classpath."""

    version: str
    directory: Path
    jars: tuple[Path, ...]
    seconds: float  # how long this fetch took (0 when it came from the cache)
    cached: bool

    @property
    def classpath(self) -> str:
        return os.pathsep.join(str(j) for j in self.jars)


def cache_root() -> Path:
    return Path(os.environ.get("EPOCHAL_CACHE") or Path.home() / ".cache" / "epochal")


def cache_dir(version: str, root: Path | None = None) -> Path:
    return (root or cache_root()) / f"kafka-{version}"


def pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def cached(version: str = DEFAULT_VERSION, root: Path | None = None) -> KafkaJars | None:
    """The cached jars of ``version``, or None if they were never (completely) fetched,
    or were fetched from another ``pom.xml``."""
    directory = cache_dir(version, root)
    manifest, digest = directory / MANIFEST, directory / POM_DIGEST
    if not manifest.exists() or not digest.exists() or digest.read_text().strip() != pom_digest():
        return None
    jars = tuple(directory / "lib" / name for name in manifest.read_text().split())
    if not jars or not all(j.exists() for j in jars):
        return None
    return KafkaJars(version, directory, jars, 0.0, True)


def fetch(version: str = DEFAULT_VERSION, root: Path | None = None,
          mvn: str | None = None) -> KafkaJars:
    """Kafka ``version``'s runtime jars: from the cache, or resolved with Maven (once)."""
    if not VERSION.fullmatch(version):
        raise KafkaFetchError(f"not a Kafka release version: {version!r} (e.g. {DEFAULT_VERSION})")
    hit = cached(version, root)
    if hit is not None:
        return hit
    mvn_path = mvn or shutil.which("mvn")
    if mvn_path is None:
        raise KafkaFetchError("mvn not found on PATH: install Maven 3.8 or later "
                              "(Debian: apt-get install maven) to fetch Kafka's jars")
    directory = cache_dir(version, root)
    staging = directory / "lib.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    t0 = time.monotonic()
    try:
        jars = _resolve(mvn_path, version, staging)
    except KafkaFetchError:
        shutil.rmtree(directory, ignore_errors=True)  # nothing half-fetched stays behind
        raise
    lib = directory / "lib"
    shutil.rmtree(lib, ignore_errors=True)
    staging.rename(lib)
    (directory / POM_DIGEST).write_text(pom_digest() + "\n")
    tmp = directory / (MANIFEST + ".tmp")
    tmp.write_text("".join(f"{j.name}\n" for j in jars))
    os.replace(tmp, directory / MANIFEST)
    return KafkaJars(version, directory, tuple(lib / j.name for j in jars),
                     time.monotonic() - t0, False)


def _resolve(mvn_path: str, version: str, staging: Path) -> list[Path]:
    """Run Maven once, copying the runtime jars into ``staging``; returns them."""
    argv = [mvn_path, "-q", "-B", "-Dstyle.color=never", "-f", str(POM),
            "dependency:copy-dependencies", f"-Dkafka.version={version}",
            f"-DoutputDirectory={staging}"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        raise KafkaFetchError(f"mvn did not resolve kafka_2.13:{version} within "
                              f"{MAVEN_TIMEOUT_S:.0f}s") from None
    except OSError as exc:
        raise KafkaFetchError(f"cannot run {mvn_path}: {exc.strerror or exc}") from None
    jars = sorted(staging.glob("*.jar"))
    if done.returncode != 0:
        raise KafkaFetchError(f"mvn could not resolve org.apache.kafka:kafka_2.13:{version} "
                              f"(exit {done.returncode}): {_first_error(done.stdout + done.stderr)}")
    if not any(j.name == f"kafka_2.13-{version}.jar" for j in jars):
        raise KafkaFetchError(f"mvn succeeded but left no kafka_2.13-{version}.jar in {staging}")
    return jars


def _first_error(output: str) -> str:
    """Maven's first ``[ERROR]`` line, which names what failed (else its last line),
    without colour codes or the goal it was running."""
    lines = [line.strip() for line in _ANSI.sub("", output).splitlines() if line.strip()]
    errors = [line.split("[ERROR]", 1)[1].strip() for line in lines if "[ERROR]" in line]
    errors = [re.sub(r"^Failed to execute goal on project [^:]*: ", "", e) for e in errors if e]
    text = errors[0] if errors else (lines[-1] if lines else "no output")
    return text if len(text) <= 300 else text[:297] + "..."
