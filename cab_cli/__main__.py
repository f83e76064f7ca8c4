"""``python -m cab_cli``: the same as the ``cab`` console script."""

import sys

from cab_cli.main import main

sys.exit(main())
