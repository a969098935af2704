"""``epochal quotas alter|describe``: controller mutation quotas per user and client id
(seed 001; :mod:`impl.node.quota`).

A quota's entity is a user, a client id, or both, either of which may be the default.  The
commands sign in as the operator (the data dir's secret), not as the entity they name.
"""

from __future__ import annotations

import argparse
from typing import Any

from impl.harness.cli.cluster_access import add_bootstrap_flags, admin, friendly
from impl.harness.cli.errors import UsageError
from impl.harness.cli.output import print_json, wants_json


def register(sub: Any) -> None:
    quotas = sub.add_parser("quotas", help="controller mutation quotas per user / client id")
    qsub = quotas.add_subparsers(dest="action", metavar="ACTION", parser_class=type(quotas))
    qsub.required = True
    p = qsub.add_parser("alter", help="set or remove a controller_mutation_rate")
    _entity_args(p)
    p.add_argument("--default", action="store_true",
                   help="the default for every user (same as --user-default)")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--controller-mutation-rate", type=float, metavar="R",
                       help="partition mutations per second (burst: R x 11 samples x 1 s)")
    group.add_argument("--delete", action="store_true", help="remove the quota")
    add_bootstrap_flags(p)
    p.set_defaults(func=friendly(alter))
    p = qsub.add_parser("describe", help="stored quotas, and the controller's metrics")
    _entity_args(p)
    add_bootstrap_flags(p)
    p.set_defaults(func=friendly(describe))


def _entity_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", help="user name")
    p.add_argument("--user-default", action="store_true", help="the default user")
    p.add_argument("--client-id", help="client id")
    p.add_argument("--client-default", action="store_true", help="the default client id")


def _entity(args: argparse.Namespace, need: bool) -> tuple[str | None, str | None]:
    from impl.node.quota import DEFAULT, validate_entity_name

    if args.user and args.user_default:
        raise UsageError("give --user or --user-default, not both")
    if args.client_id and args.client_default:
        raise UsageError("give --client-id or --client-default, not both")
    user = DEFAULT if args.user_default or getattr(args, "default", False) else args.user
    client = DEFAULT if args.client_default else args.client_id
    if need and user is None and client is None:
        raise UsageError("name the quota's entity: --user U, --client-id C (or both), "
                         "--user-default, --client-default or --default")
    validate_entity_name(user, "user")
    validate_entity_name(client, "client id")
    return user, client


def _entity_text(user: str | None, client: str | None) -> str:
    from impl.node.quota import tag_name

    return tag_name((user, client))


def alter(args: argparse.Namespace) -> int:
    if args.default and args.user:
        raise UsageError("give --user or --default, not both")
    user, client = _entity(args, need=True)
    rate = None if args.delete else args.controller_mutation_rate
    if rate is not None and not rate > 0:
        raise UsageError(f"--controller-mutation-rate must be positive, got {rate:g}")
    entity = _entity_text(user, client)
    with admin(args, as_user=False) as operator:
        if rate is None and not any(q["user"] == user and q["client_id"] == client
                                    for q in operator.describe_quotas()["quotas"]):
            raise UsageError(f"no controller_mutation_rate quota for {entity}: nothing removed")
        operator.alter_quota(user, client, rate)
    if wants_json(args):
        return print_json(args, 0, user=user, client_id=client, controller_mutation_rate=rate,
                          removed=rate is None)
    what = "removed" if rate is None else f"set to {rate:g} mutations/s"
    print(f"controller_mutation_rate for {entity}: {what}")
    return 0


def describe(args: argparse.Namespace) -> int:
    user, client = _entity(args, need=False)
    with admin(args, as_user=False) as operator:
        resp = operator.describe_quotas()
    quotas = [q for q in resp["quotas"]
              if (user is None or q["user"] == user) and (client is None or q["client_id"] == client)]
    if wants_json(args):
        return print_json(args, 0, quotas=quotas, metrics=resp.get("metrics", {}))
    for q in quotas:
        print(f"{_entity_text(q['user'], q['client_id'])}  "
              f"controller_mutation_rate={q['controller_mutation_rate']:g}")
    if not quotas:
        print("(no quotas)")
    for name, m in sorted(resp.get("metrics", {}).items()):
        print(f"metrics {name}  rate={m['rate']:.2f}/s  tokens={m['tokens']:.1f}  "
              f"throttle-time={m['throttle-time']:.0f}ms")
    return 0
