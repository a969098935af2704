"""A stand-in for a port's broker: the Python broker, started the way a port is.

``epochal chaos --broker-cmd`` and ``epochal record-traces --broker-cmd`` start a foreign
broker from a command template (docs/ports.md).  This script is what a port's launcher
looks like to the harness -- positional id, port, ZooKeeper and data directory, the rest
of the settings from the JSON file the harness writes -- and it runs the Python broker in
this very process (no child: the harness's signals must reach the broker itself):

    epochal chaos --seed 1 --duration 30 --broker-cmd \\
      "python ports/python/stand_in_broker.py {id} {port} {zookeeper} {data_dir} --config {config_json}"

The four positional values win over the file's: they are what the issue's template names,
so a run with this stand-in proves that they alone place the broker in the cluster.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from impl.node.broker.server import main as broker_main  # noqa: E402
from impl.node.config import BrokerConfig  # noqa: E402


def config_from(argv: list[str]) -> BrokerConfig:
    p = argparse.ArgumentParser(prog="stand_in_broker.py",
                                description="the Python broker behind a port's command line")
    p.add_argument("broker_id", type=int)
    p.add_argument("port", type=int)
    p.add_argument("zookeeper")
    p.add_argument("data_dir", type=Path)
    p.add_argument("--config", type=Path, default=None, metavar="JSON",
                   help="every other setting ({config_json}); default: the broker's defaults")
    args = p.parse_args(argv)
    settings = json.loads(args.config.read_text()) if args.config else {}
    settings.update(broker_id=args.broker_id, port=args.port, zookeeper=args.zookeeper,
                    data_dir=args.data_dir)
    try:
        return BrokerConfig(**settings)
    except (TypeError, ValueError) as exc:  # an unknown or inconsistent setting: one line
        p.error(str(exc))


if __name__ == "__main__":
    sys.exit(broker_main(config_from(sys.argv[1:]).to_argv()))
