"""The test fleet's pure parts (names, addresses, the inventory, sshd's configuration); no root needed.

The fleet itself, built for real, is tested in tests/integration/test_collective_hosts.py.
"""
import ipaddress
import json
import os
import subprocess
import sys

import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netns_fleet  # noqa: E402  pylint: disable=wrong-import-position


def planned(tmp_path, **kwargs):
    fleet = netns_fleet.Fleet(tmp_path, prefix="gft", python="/opt/py/bin/python3", **kwargs)
    fleet._plan()  # pylint: disable=protected-access
    fleet.subnet = ipaddress.ip_network("10.213.4.0/24")
    for index, host in enumerate(fleet.hosts):
        host["address"] = str(fleet.subnet[10 + index])
    return fleet


def test_rack_names_run_through_the_alphabet_and_beyond():
    assert [netns_fleet.rack_name(i) for i in (0, 1, 25, 26, 27, 51, 52)] == [
        "rack_a", "rack_b", "rack_z", "rack_aa", "rack_ab", "rack_az", "rack_ba"]


def test_the_first_free_subnet_skips_every_network_in_use():
    used = netns_fleet.parse_networks(
        "1: lo    inet 127.0.0.1/8 scope host lo\n"
        "4: eth0    inet 10.213.0.7/24 brd 10.213.0.255 scope global eth0\n",
        "default via 192.0.2.1 dev eth0\n"
        "10.213.1.0/24 dev gfxbr proto kernel scope link src 10.213.1.1\n"
        "10.213.2.128/25 via 192.0.2.9 dev eth0\n"
        "local 10.213.9.1 dev gfybr table local proto kernel scope host src 10.213.9.1\n")
    assert netns_fleet.free_subnet(used) == ipaddress.ip_network("10.213.3.0/24")
    assert netns_fleet.free_subnet([]) == ipaddress.ip_network("10.213.0.0/24")
    with pytest.raises(netns_fleet.FleetError, match="every /24"):
        netns_fleet.free_subnet([ipaddress.ip_network("10.0.0.0/8")])


def test_default_prefixes_are_distinct_and_valid():
    prefixes = {netns_fleet.default_prefix() for unused_index in range(50)}
    assert len(prefixes) == 50
    assert all(netns_fleet.PREFIX_RE.match(prefix) for prefix in prefixes)


def test_names_fit_linux_interface_names_and_racks_have_their_size(tmp_path):
    fleet = planned(tmp_path, hosts=5, rack_size=2, unreachable=2)
    fleet.prefix = "gfabcdef"
    fleet._plan()  # pylint: disable=protected-access
    assert fleet.names == ["gfabcdef-n01", "gfabcdef-n02", "gfabcdef-n03", "gfabcdef-n04", "gfabcdef-n05",
                           "gfabcdef-u01", "gfabcdef-u02"]
    assert [host["rack"] for host in fleet.hosts] == ["rack_a", "rack_a", "rack_b", "rack_b", "rack_c", "rack_c", "rack_d"]
    assert [host["namespace"] for host in fleet.hosts][5:] == [None, None]
    for name in [fleet.bridge] + [host["veth"] for host in fleet.live_hosts]:
        assert len(name) <= 15, name


@pytest.mark.parametrize("kwargs, message", [
    ({"hosts": 0}, "1 to 200 hosts"),
    ({"hosts": 150, "unreachable": 60}, "1 to 200 hosts"),
    ({"hosts": 2, "rack_size": 0}, "rack_size"),
])
def test_bad_sizes_are_refused(tmp_path, kwargs, message):
    with pytest.raises(netns_fleet.FleetError, match=message):
        planned(tmp_path, **kwargs)


def test_bad_prefixes_and_directories_are_refused(tmp_path):
    with pytest.raises(netns_fleet.FleetError, match="prefix"):
        netns_fleet.Fleet(tmp_path, prefix="toolongprefix")._plan()  # pylint: disable=protected-access
    with pytest.raises(netns_fleet.FleetError, match="white space"):
        netns_fleet.Fleet(tmp_path / "a b", prefix="gft")._plan()  # pylint: disable=protected-access
    with pytest.raises(netns_fleet.FleetError, match="too long for SSH control sockets"):
        netns_fleet.Fleet(tmp_path / ("x" * 120), prefix="gft")._plan()  # pylint: disable=protected-access


def test_the_inventory_puts_hosts_in_racks_with_host_key_checking_on(tmp_path):
    fleet = planned(tmp_path, hosts=3, rack_size=2, unreachable=1)
    inventory = yaml.safe_load(netns_fleet.render_inventory(fleet))
    variables = inventory["all"]["vars"]
    assert variables["ansible_user"] == "root"
    assert variables["ansible_python_interpreter"] == "/opt/py/bin/python3"
    assert variables["ansible_ssh_private_key_file"] == os.path.join(str(tmp_path), "id_ed25519")
    common = variables["ansible_ssh_common_args"].split()
    assert "UserKnownHostsFile=%s" % os.path.join(str(tmp_path), "known_hosts") in common
    assert "StrictHostKeyChecking=yes" in common and "GlobalKnownHostsFile=/dev/null" in common
    assert variables["ansible_control_path_dir"] == os.path.join(str(tmp_path), "cp")
    racks = inventory["all"]["children"]
    assert sorted(racks) == ["rack_a", "rack_b"]
    assert racks["rack_a"]["hosts"] == {"gft-n01": {"ansible_host": "10.213.4.10"}, "gft-n02": {"ansible_host": "10.213.4.11"}}
    assert racks["rack_b"]["hosts"] == {"gft-n03": {"ansible_host": "10.213.4.12"}, "gft-u01": {"ansible_host": "10.213.4.13"}}


def test_sshd_listens_only_on_its_address_with_keys_only(tmp_path):
    fleet = planned(tmp_path, hosts=2)
    host = fleet.hosts[1]
    lines = netns_fleet.render_sshd_config(fleet, host).splitlines()
    settings = dict(line.split(" ", 1) for line in lines if line and not line.startswith("#"))
    folder = os.path.join(str(tmp_path), "hosts", "gft-n02")
    assert settings["ListenAddress"] == "10.213.4.11"
    assert settings["HostKey"] == '"%s"' % os.path.join(folder, "ssh_host_ed25519_key")
    assert settings["PidFile"] == '"%s"' % os.path.join(folder, "sshd.pid")
    assert settings["AuthorizedKeysFile"] == '"%s"' % os.path.join(str(tmp_path), "authorized_keys")
    assert settings["PermitRootLogin"] == "prohibit-password"
    assert settings["PasswordAuthentication"] == "no"
    assert settings["UsePAM"] == "no"


def test_ssh_argv_quotes_the_remote_command_and_keeps_host_key_checking(tmp_path):
    fleet = planned(tmp_path, hosts=1)
    argv = fleet.ssh_argv("gft-n01", "python3", "-c", "print('a b')")
    assert argv[-1] == "python3 -c 'print('\"'\"'a b'\"'\"')'"
    assert "StrictHostKeyChecking=yes" in argv and argv[-3] == "root@10.213.4.10"


def test_the_state_file_round_trips(tmp_path):
    fleet = planned(tmp_path, hosts=2, unreachable=1)
    fleet.state = "up"
    fleet.save()
    loaded = netns_fleet.Fleet.load(tmp_path)
    assert (loaded.prefix, loaded.subnet, loaded.hosts, loaded.state) == (fleet.prefix, fleet.subnet, fleet.hosts, "up")
    with pytest.raises(netns_fleet.FleetError, match="no fleet in"):
        netns_fleet.Fleet.load(tmp_path / "elsewhere")


def test_a_fleet_that_never_claimed_its_names_tears_nothing_down(tmp_path):
    fleet = netns_fleet.Fleet(tmp_path, prefix="gft")
    fleet.down()  # state "new": nothing of another fleet with the same prefix may be touched
    assert not os.path.exists(os.path.join(str(tmp_path), netns_fleet.STATE_FILE))


# Two ed25519 host public keys (made with ssh-keygen for this test; their private halves were thrown away).
HOST_KEYS = ("AAAAC3NzaC1lZDI1NTE5AAAAINmTmpdSbWN673qrucv6x9ffKPkxGExgUqk5DXxi8OcK",
             "AAAAC3NzaC1lZDI1NTE5AAAAIPPJMxADU6JKFHkSH3b0+agzbjj+4ZB7A/GLoKxvnaEc")


def _with_host_keys(fleet):
    for host, key in zip(fleet.live_hosts, HOST_KEYS):
        folder = fleet.host_dir(host["name"])
        os.makedirs(folder)
        with open(os.path.join(folder, "ssh_host_ed25519_key.pub"), "w") as handle:
            handle.write("ssh-ed25519 %s %s\n" % (key, host["name"]))
    fleet._write_known_hosts()  # pylint: disable=protected-access
    return fleet


def test_known_hosts_names_match_what_paramiko_looks_up():
    assert netns_fleet.known_hosts_host("10.213.4.10") == "10.213.4.10"
    assert netns_fleet.known_hosts_host("10.213.4.10", 22) == "10.213.4.10"
    assert netns_fleet.known_hosts_host("10.213.4.10", 2222) == "[10.213.4.10]:2222"


def test_the_paramiko_home_holds_the_host_keys_as_paramiko_reads_them(tmp_path):
    fleet = _with_host_keys(planned(tmp_path, hosts=2, unreachable=1))
    with open(fleet.known_hosts_path) as handle:  # OpenSSH's file is as it was: name and address
        assert handle.read().splitlines() == ["gft-n01,10.213.4.10 ssh-ed25519 %s" % HOST_KEYS[0],
                                              "gft-n02,10.213.4.11 ssh-ed25519 %s" % HOST_KEYS[1]]
    assert fleet.paramiko_known_hosts_path == os.path.join(str(tmp_path), "paramiko-home", ".ssh", "known_hosts")
    with open(fleet.paramiko_known_hosts_path) as handle:
        assert handle.read().splitlines() == ["10.213.4.10 ssh-ed25519 %s" % HOST_KEYS[0],
                                              "10.213.4.11 ssh-ed25519 %s" % HOST_KEYS[1]]
    assert os.stat(fleet.paramiko_known_hosts_path).st_mode & 0o777 == 0o600
    assert os.stat(fleet.paramiko_home).st_mode & 0o777 == 0o700
    import paramiko  # pylint: disable=import-outside-toplevel  # requirements-dev.txt installs it
    keys = paramiko.HostKeys(fleet.paramiko_known_hosts_path)
    assert keys.lookup("10.213.4.10")["ssh-ed25519"].get_base64() == HOST_KEYS[0]
    assert keys.lookup("10.213.4.11")["ssh-ed25519"].get_base64() == HOST_KEYS[1]
    assert keys.lookup("10.213.4.12") is None  # the host without a namespace has no key


def test_the_paramiko_environment_points_home_at_the_fleet_and_keeps_host_key_checking_on(tmp_path):
    fleet = planned(tmp_path, hosts=1)
    env = fleet.paramiko_env({"PATH": "/usr/bin", "HOME": "/root", "SSH_AUTH_SOCK": "/tmp/agent.1",
                              "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_SSH_HOST_KEY_CHECKING": "False",
                              "ANSIBLE_PARAMIKO_HOST_KEY_CHECKING": "False", "ANSIBLE_PARAMIKO_HOST_KEY_AUTO_ADD": "1",
                              "ANSIBLE_PARAMIKO_LOOK_FOR_KEYS": "True", "ANSIBLE_PARAMIKO_RECORD_HOST_KEYS": "True"})
    assert env == {"PATH": "/usr/bin", "HOME": os.path.join(str(tmp_path), "paramiko-home"),
                   "ANSIBLE_PARAMIKO_HOST_KEY_CHECKING": "True", "ANSIBLE_PARAMIKO_RECORD_HOST_KEYS": "False"}
    assert fleet.paramiko_env()["HOME"] == fleet.paramiko_home


def test_the_paramiko_inventory_has_the_same_hosts_and_checks_host_keys(tmp_path):
    fleet = planned(tmp_path, hosts=3, rack_size=2, unreachable=1)
    ssh_inventory = yaml.safe_load(netns_fleet.render_inventory(fleet))
    inventory = yaml.safe_load(netns_fleet.render_paramiko_inventory(fleet))
    assert inventory["all"]["children"] == ssh_inventory["all"]["children"]
    assert inventory["all"]["vars"] == {
        "ansible_connection": "paramiko", "ansible_user": "root",
        "ansible_paramiko_private_key_file": os.path.join(str(tmp_path), "id_ed25519"),
        "ansible_paramiko_host_key_checking": True, "ansible_paramiko_timeout": 10,
        "ansible_python_interpreter": "/opt/py/bin/python3"}


def test_an_owner_lives_while_its_process_or_its_up_directory_does(tmp_path):
    boot = netns_fleet._read_text(netns_fleet.BOOT_ID_PATH)  # pylint: disable=protected-access
    me = {"pid": os.getpid(), "pid_start_ticks": netns_fleet.process_start_ticks(os.getpid()), "boot_id": boot}
    assert netns_fleet.owner_alive(me)
    assert not netns_fleet.owner_alive(dict(me, boot_id="another boot"))
    assert not netns_fleet.owner_alive(dict(me, pid_start_ticks=me["pid_start_ticks"] - 1))  # the pid was reused
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                              check=True)
    assert not netns_fleet.owner_alive(dict(me, pid=int(finished.stdout)))
    directory = {"pid": None, "prefix": "gft", "directory": str(tmp_path)}
    assert not netns_fleet.owner_alive(directory)  # no state file
    for state, alive in (("up", True), ("building", True), ("down", False), ("failed", False)):
        (tmp_path / netns_fleet.STATE_FILE).write_text(json.dumps({"prefix": "gft", "state": state}))
        assert netns_fleet.owner_alive(directory) is alive, state
    (tmp_path / netns_fleet.STATE_FILE).write_text(json.dumps({"prefix": "other", "state": "up"}))
    assert not netns_fleet.owner_alive(directory)  # the directory now holds another fleet
    (tmp_path / netns_fleet.STATE_FILE).write_text("{not json")
    assert not netns_fleet.owner_alive(directory)


def test_an_owner_record_that_cannot_be_read_counts_as_none(tmp_path, monkeypatch):
    monkeypatch.setattr(netns_fleet, "OWNERS_DIR", str(tmp_path))
    assert netns_fleet.read_owner("gft") is None
    (tmp_path / "gft.json").write_text("[1, 2]")
    assert netns_fleet.read_owner("gft") is None
    (tmp_path / "gft.json").write_text("{broken")
    assert netns_fleet.read_owner("gft") is None
    (tmp_path / "gft.json").write_text(json.dumps({"pid": 7}))
    assert netns_fleet.read_owner("gft") == {"pid": 7}
