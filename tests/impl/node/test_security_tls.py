"""TLS on top of SCRAM (``tls=True``, Kafka's SASL_SSL): the cluster works as without it, a
plain-TCP peer gets nothing, and a client that does not trust the cluster CA does not
connect (impl/node/auth/tls.py)."""

from __future__ import annotations

import shutil
import socket
import ssl
import stat
from typing import Any

import pytest

from impl.node.auth.tls import CA, CERT, KEY, tls_dir
from impl.node.client import Admin, Consumer, Producer
from impl.node.wire import ApiKey, BlockingConnection, ErrorCode, encode_request

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("openssl") is None,
                                 reason="the cluster CA is made with the openssl command line")]


def test_a_tls_cluster_replicates_and_refuses_plain_and_untrusting_peers(make_cluster: Any,
                                                                        tmp_path: Any) -> None:
    c = make_cluster(2, tls=True)
    d = tls_dir(c.data_dir)
    assert stat.S_IMODE((d / KEY).stat().st_mode) == 0o600 and (d / CA).exists() and (d / CERT).exists()
    with Admin(c.bootstrap) as admin:
        admin.create_topic("sealed", assignment={0: [0, 1]})
    with Producer(c.bootstrap, acks=-1) as producer:  # the follower fetches over TLS too
        producer.send("sealed", "one", partition=0)
    with Consumer(c.bootstrap) as consumer:
        assert [v for _p, _o, v in consumer.consume("sealed", True, 1.0)] == [b"one"]
    conn = BlockingConnection(*c.endpoint(0), timeout=5)
    assert isinstance(conn.sock, ssl.SSLSocket) and conn.send(ApiKey.METADATA, {})[0] == ErrorCode.NONE
    conn.close()
    # a plain-TCP frame is not TLS: the broker drops the connection without an answer
    with socket.create_connection(c.endpoint(0), timeout=5) as plain:
        plain.sendall(encode_request(ApiKey.METADATA, 0, 1, 0, {}))
        try:
            answer = plain.recv(4096)
        except ConnectionResetError:
            answer = b""
        assert answer == b""
    # a client that trusts only the system's CAs refuses the cluster's certificate
    with pytest.raises(ssl.SSLCertVerificationError):
        BlockingConnection(*c.endpoint(0), timeout=5, tls=ssl.create_default_context())
