"""`python -m vkops`: see vkops/cli.py."""
import sys

from .cli import main

sys.exit(main())
