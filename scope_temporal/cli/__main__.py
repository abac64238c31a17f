"""`python -m scope_temporal.cli` is `scope-temporal`."""

import sys

from scope_temporal.cli import main

sys.exit(main())
