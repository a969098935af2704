"""``python -m impl.node.broker``: run one broker process (see :func:`impl.node.broker.main`)."""

import sys

from impl.node.broker.server import main

sys.exit(main())
