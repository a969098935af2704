"""The runnable system: brokers, an elected controller, real ZooKeeper, RPC over TCP, logs on disk."""
