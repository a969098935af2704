"""Who may talk to the cluster, and how much of it they may take: nobody but the cluster may change it.

* :mod:`.credentials` -- the cluster's secret (generated per data directory, mode 0600), the
  principals it names (``operator``, ``broker-N``, client users) and the credentials each
  process presents on the connections it opens;
* :mod:`.scram` -- SCRAM-SHA-256 (RFC 5802/7677, as Kafka's SASL/SCRAM), client and server
  side, on the maintained ``scramp`` library: no cryptography of our own;
* :mod:`.tls` -- opt-in TLS under SCRAM (Kafka's SASL_SSL): the cluster CA the harness makes
  with the ``openssl`` command line, and Python's ``ssl`` contexts;
* :mod:`.rules` -- which principal may send which request (control requests only from the
  controller's broker principal, replica fetches only from the follower's, a forwarded
  principal only from a broker), and the admin principal taken from authentication;
* :mod:`.session` -- one connection's authentication state, as the broker's server uses it;
* :mod:`.connections` -- the connection cap, the idle and authentication timeouts, and one
  rate-limited log line in place of one per refused connection;
* :mod:`.zookeeper` -- the SASL sign-in by which ZooKeeper admits the cluster, and the ACLs
  its znodes are written with.

docs/security.md gives the threat model and what is and is not authenticated.
"""
