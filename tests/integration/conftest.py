"""Fixtures of the integration tests: `netns_fleet`, a factory of test fleets (tests/fleet/netns_fleet.py).

    def test_something(netns_fleet):
        fleet = netns_fleet(hosts=3, rack_size=2, unreachable=0)   # up, with fleet.inventory_path written
        ...                                                          # torn down after the test, completely

When this machine cannot build a fleet (not root, no sshd, no `ip`, no network namespaces) the test is skipped with the
reason, or fails with it when GPUFLEET_REQUIRE_NETNS=1 (scripts/test sets it, so CI never skips these silently).
"""
import os
import sys

import pytest

FLEET_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fleet")
if FLEET_DIR not in sys.path:
    sys.path.insert(0, FLEET_DIR)

import netns_fleet as fleet_lib  # noqa: E402  pylint: disable=wrong-import-position


def _cannot_build(reason):
    message = "cannot build a network-namespace test fleet: %s" % reason
    if os.environ.get("GPUFLEET_REQUIRE_NETNS") == "1":
        pytest.fail(message + " (GPUFLEET_REQUIRE_NETNS=1 requires it)", pytrace=False)
    pytest.skip(message + " (set GPUFLEET_REQUIRE_NETNS=1 to fail instead)")


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
