"""The stand-in sign-in plugin (oauth_testing.people) is imported from this folder."""

import sys
from pathlib import Path

HERE = str(Path(__file__).parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
