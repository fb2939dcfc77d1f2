"""`tieaware` console script."""
import argparse


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tieaware")
    parser.print_help()
    return 0
