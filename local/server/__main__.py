"""``python -m local.server``: the server process (local/server/__init__.py ``main``)."""

import sys

from local.server import main

sys.exit(main())
