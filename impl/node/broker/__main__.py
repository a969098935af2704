"""``python -m impl.node.broker``: run one broker process (see :func:`impl.node.broker.main`)."""

import sys

# The Kafka codec (kio) registers test strategies with Hypothesis whenever it can import it; a
# broker generates no test data, and that import is about a sixth of its start-up, paid by
# every broker a cluster starts or restarts.  A None entry makes the import fail, which kio
# allows for.  (The package's own ``__init__`` imports nothing, so this runs first.)
sys.modules.setdefault("hypothesis", None)

from impl.node.broker.server import main  # noqa: E402  (after the entry above, on purpose)

sys.exit(main())
