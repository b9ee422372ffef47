"""Command line of the fake probes: the same --params/--out contract as the real ones."""
import argparse
import json


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--params")
    parser.add_argument("--out")
    args = parser.parse_args()
    params = {}
    if args.params:
        with open(args.params) as handle:
            params = json.load(handle)
    return args, params
