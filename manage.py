#!/usr/bin/env python
"""Django's command-line utility for Telha clarify (also installed as `telha`)."""

import sys

from telha.cli import main

if __name__ == "__main__":
    sys.exit(main())
