"""Placeholder hook client until issue 3 lands: always exits 0."""

import sys


def main(argv):
    sys.stdin.buffer.read()
    return 0
