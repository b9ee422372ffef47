"""Fixtures of the integration tests: `netns_fleet`, a factory of test fleets (tests/fleet/netns_fleet.py),
`slurm_cluster`, a real Slurm controller with nodes on this machine (tests/fleet/slurm_cluster.py), and
`installed_collection`, the collection built and installed as a user would (tests/fleet/installed_collection.py).

    def test_something(netns_fleet):
        fleet = netns_fleet(hosts=3, rack_size=2, unreachable=0)   # up, with fleet.inventory_path written
        ...                                                          # torn down after the test, completely

When this machine cannot build a fleet (not root, no sshd, no `ip`, no network namespaces) the test is skipped with the
reason, or fails with it when GPUFLEET_REQUIRE_NETNS=1 (scripts/test sets it, so CI never skips these silently); the
same for Slurm with GPUFLEET_REQUIRE_SLURM=1.
"""
import os
import sys

import pytest

FLEET_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fleet")
if FLEET_DIR not in sys.path:
    sys.path.insert(0, FLEET_DIR)

import installed_collection as installed_lib  # noqa: E402  pylint: disable=wrong-import-position
import netns_fleet as fleet_lib  # noqa: E402  pylint: disable=wrong-import-position
import slurm_cluster as slurm_lib  # noqa: E402  pylint: disable=wrong-import-position
from required_parts import missing  # noqa: E402  pylint: disable=wrong-import-position,import-error


def _cannot_build(reason):
    missing("cannot build a network-namespace test fleet: %s" % reason, "GPUFLEET_REQUIRE_NETNS")


@pytest.fixture
def netns_fleet(tmp_path_factory):
    """Factory: netns_fleet(hosts=2, rack_size=2, unreachable=0, prefix=None) -> an up fleet_lib.Fleet."""
    reason = fleet_lib.unavailable_reason()
    if reason:
        _cannot_build(reason)
    fleets = []

    def make(hosts=2, rack_size=2, unreachable=0, prefix=None):
        fleet = fleet_lib.Fleet(tmp_path_factory.mktemp("fleet"), hosts=hosts, rack_size=rack_size,
                                unreachable=unreachable, prefix=prefix, prefix_is_hint=True)
        fleets.append(fleet)
        try:
            return fleet.up()
        except fleet_lib.FleetUnavailable as exc:
            fleets.remove(fleet)
            _cannot_build(str(exc))
        return None

    yield make
    problems = []
    for fleet in reversed(fleets):
        try:
            fleet.down()
        except fleet_lib.FleetError as exc:
            problems.append(str(exc))
    assert not problems, problems


@pytest.fixture(scope="session")
def installed_collection(tmp_path_factory):
    """The collection built from this tree and installed with the README's commands, once per test session: an
    installed_lib.Installed (work, home, path: the collections path, collection: its folder, output)."""
    return installed_lib.build_and_install(tmp_path_factory.mktemp("installed_collection"))


@pytest.fixture
def slurm_cluster(tmp_path_factory):
    """Factory: slurm_cluster({node: [partition, ...]}) -> an up slurm_lib.SlurmCluster, stopped after the test."""
    clusters = []

    def make(partitions_of):
        reason = slurm_lib.unavailable_reason()
        try:
            if reason:
                raise slurm_lib.SlurmUnavailable(reason)
            cluster = slurm_lib.SlurmCluster(tmp_path_factory.mktemp("slurm"), partitions_of)
            clusters.append(cluster)
            return cluster.up()
        except slurm_lib.SlurmUnavailable as exc:
            missing("cannot start a Slurm cluster: %s" % exc, "GPUFLEET_REQUIRE_SLURM")
        return None

    yield make
    for cluster in reversed(clusters):
        cluster.down()
