"""A test fleet on one machine: N hosts, each a Linux network namespace with its own address and its own sshd.

All hosts hang off one bridge in the root namespace, so they reach each other and the controller (which runs in the
root namespace) reaches them over SSH with host-key checking on. The namespaces share the file system, so every host
runs the controller's own Python (the inventory's ansible_python_interpreter).

As a module (the pytest fixture ``netns_fleet`` in tests/integration/conftest.py uses it)::

    fleet = Fleet("/tmp/f1", hosts=3, rack_size=2, unreachable=1).up()
    ...  # ansible-playbook -i fleet.inventory_path ...
    fleet.kill_sshd("gf1a2b-n02")         # new connections to that host are refused
    fleet.make_unreachable("gf1a2b-n03")  # the host stays in the inventory but nothing answers at its address
    fleet.wedge_sshd("gf1a2b-n01")        # port 22 accepts, sends an SSH banner, then says nothing (a wedged sshd)
    fleet.down()

Over paramiko (docs/connections.md), with host-key checking on as well: ansible-core's paramiko plugin ignores
ansible_ssh_common_args (the fleet's UserKnownHostsFile) and reads host keys only from ~/.ssh/known_hosts and
/etc/ssh/ssh_known_hosts, so the fleet also writes a home of its own whose .ssh/known_hosts holds the hosts' keys as
paramiko looks them up (the address, or [address]:port off port 22), and a second inventory::

    env = fleet.paramiko_env()  # HOME=<dir>/paramiko-home, host-key checking on, nothing recorded, no agent
    ... # ansible-playbook -i fleet.paramiko_inventory_path ..., env=env
    ... # or the ssh inventory with -e ansible_connection=paramiko, env=env

Neither the real user's ~/.ssh nor /etc is read for keys of the fleet or written.

As a command (as root)::

    python tests/fleet/netns_fleet.py up --hosts 3 --dir /tmp/f1 [--rack-size 2] [--unreachable 1] [--prefix gf1]
    python tests/fleet/netns_fleet.py down --dir /tmp/f1
    python tests/fleet/netns_fleet.py reclaim --prefix gf1   # names left by a fleet whose owner is gone

Names (kept within Linux's 15 characters for interfaces), for prefix P: namespace and inventory name P-nNN (P-uNN for a
host that never had a namespace), bridge Pbr, root-side veth PvN, the namespace side is eth0. Each fleet takes the
first free /24 of 10.213.0.0/16 (the bridge .1, hosts .10 up, hosts without a namespace .250 down), chosen under a
lock, so two fleets with different prefixes coexist. Only argv-list subprocesses (ip, ssh-keygen, sshd, ssh), no shell.

Names outlive the process that made them when it is killed (a test run stopped with SIGKILL never tears its fleet
down), and the namespaces and bridge live in the machine's network namespace, not in a temporary directory. So each
fleet records its owner under OWNERS_DIR while it holds its names: the owning process (pid, its start time, the boot)
for a fleet made in-process, or the fleet directory for one made by the ``up`` command. Names whose owner is gone are
reclaimed by the next fleet that wants them; names with no owner record (made by hand, or before owners were
recorded) are never touched unasked: a fleet whose prefix is only a hint (the test fixture's) takes another prefix, an
exact prefix (``up --prefix``) is refused, and ``reclaim --prefix P`` removes them after checking that no owner lives.
"""
from __future__ import annotations

import argparse
import fcntl
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SSHD = "/usr/sbin/sshd"
SSH_PORT = 22
SUPERNET = ipaddress.ip_network("10.213.0.0/16")
LOCK_PATH = "/run/lock/gpufleet-netns-fleet.lock"
OWNERS_DIR = "/run/lock/gpufleet-netns-fleet.owners"
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"
STATE_FILE = "fleet.json"
FIRST_HOST_OCTET = 10
LAST_GHOST_OCTET = 250
MAX_HOSTS = 200
PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{1,7}$")
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes; Ansible adds "/" and a 10-character hash to the control path dir
COMMAND_TIMEOUT_S = 30
PARAMIKO_HOME = "paramiko-home"
# What paramiko_env() sets (the paramiko plugin takes record_host_keys from the environment or ansible.cfg only, not
# from inventory variables): host-key checking on, nothing written back to the known_hosts file.
PARAMIKO_ENV = {
    "ANSIBLE_PARAMIKO_HOST_KEY_CHECKING": "True",
    "ANSIBLE_PARAMIKO_RECORD_HOST_KEYS": "False",
}
# Taken out of the environment paramiko_env() starts from: settings that could weaken host-key checking (auto_add
# accepts any new key), paramiko's search for private keys, and the user's SSH agent (paramiko would offer its keys).
# auto_add and look_for_keys are left at their defaults (off; on, in a home whose .ssh holds no private key) rather
# than set: ansible-core 2.19 warns that their environment variables are deprecated (its old core settings of the
# same names), although the plugin's options of the same names are not.
PARAMIKO_ENV_DROPPED = ("ANSIBLE_HOST_KEY_CHECKING", "ANSIBLE_SSH_HOST_KEY_CHECKING",
                        "ANSIBLE_PARAMIKO_HOST_KEY_AUTO_ADD", "ANSIBLE_PARAMIKO_LOOK_FOR_KEYS", "SSH_AUTH_SOCK")
_FLEETS_MADE = [0]
# A wedged sshd (Fleet.wedge_sshd): accepts every connection, sends an OpenSSH banner, then nothing, and keeps the
# connection open. Run by the fleet's Python inside the host's namespace; its argument is the port.
WEDGED_SSHD = r"""
import socket, sys
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("0.0.0.0", int(sys.argv[1])))
listener.listen(64)
held = []
while True:
    connection, unused_address = listener.accept()
    connection.sendall(b"SSH-2.0-OpenSSH_9.0\r\n")
    held.append(connection)
"""


class FleetError(Exception):
    """The fleet could not be built or torn down."""


class FleetUnavailable(FleetError):
    """This machine cannot build a fleet at all (not root, no sshd, no ip, no network namespaces)."""


def find_tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for folder in ("/usr/sbin", "/sbin", "/usr/bin", "/bin"):
        candidate = os.path.join(folder, name)
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def unavailable_reason(sshd: str | None = None) -> str | None:
    """Why this machine cannot build a fleet, or None when it looks able to (the build itself may still say no)."""
    sshd = sshd or SSHD
    if not sys.platform.startswith("linux"):
        return "network namespaces need Linux, not %s" % sys.platform
    if os.geteuid() != 0:
        return "making network namespaces, veths and a bridge needs root (running as uid %d)" % os.geteuid()
    if find_tool("ip") is None:
        return "the ip command (Debian package iproute2) is not installed"
    if not os.access(sshd, os.X_OK):
        return "%s is missing (Debian package openssh-server; bash scripts/install-system-packages installs it)" % sshd
    if find_tool("ssh-keygen") is None:
        return "ssh-keygen (Debian package openssh-client) is not installed"
    if find_tool("ssh") is None:
        return "the ssh client (Debian package openssh-client) is not installed"
    return None


def rack_name(index: int) -> str:
    """rack_a .. rack_z, rack_aa, rack_ab, ... for index 0, 1, ..."""
    letters = ""
    number = index + 1
    while number:
        number, remainder = divmod(number - 1, 26)
        letters = chr(ord("a") + remainder) + letters
    return "rack_" + letters


def default_prefix() -> str:
    _FLEETS_MADE[0] += 1
    number = (os.getpid() * 64 + _FLEETS_MADE[0]) % (36 ** 5)
    digits = ""
    for unused_position in range(5):
        number, remainder = divmod(number, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[remainder] + digits
    return "gf" + digits


def free_subnet(used: list, supernet=SUPERNET):
    """The first /24 of supernet that overlaps none of the networks in used (ipaddress networks)."""
    for candidate in supernet.subnets(new_prefix=24):
        if not any(candidate.overlaps(network) for network in used):
            return candidate
    raise FleetError("every /24 of %s is in use on this machine; tear down old fleets (netns_fleet.py down)" % supernet)


def parse_networks(addr_output: str, route_output: str) -> list:
    """IPv4 networks in use in the root namespace, from `ip -4 -o addr show` and `ip -4 route show`."""
    networks = []
    for line in addr_output.splitlines():
        fields = line.split()
        if "inet" in fields:
            networks.append(ipaddress.ip_interface(fields[fields.index("inet") + 1]).network)
    for line in route_output.splitlines():
        fields = line.split()
        if fields and fields[0] not in ("default", "broadcast", "local", "unreachable", "blackhole", "prohibit"):
            try:
                networks.append(ipaddress.ip_network(fields[0], strict=False))
            except ValueError:
                continue
    return networks


def yaml_string(value: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(value)


def known_hosts_host(address: str, port: int = SSH_PORT) -> str:
    """The host field of a known_hosts line as paramiko's SSHClient looks it up: the address on port 22, else
    [address]:port."""
    return address if int(port) == SSH_PORT else "[%s]:%d" % (address, int(port))


def _inventory_hosts(fleet: "Fleet") -> list:
    lines = []
    racks = {}
    for host in fleet.hosts:
        racks.setdefault(host["rack"], []).append(host)
    for rack in sorted(racks, key=lambda name: (len(name), name)):
        lines += ["    %s:" % rack, "      hosts:"]
        for host in racks[rack]:
            lines.append("        %s:" % host["name"])
            lines.append("          ansible_host: %s" % yaml_string(host["address"]))
    return lines


def render_paramiko_inventory(fleet: "Fleet") -> str:
    """The fleet's hosts over paramiko; run ansible-playbook with fleet.paramiko_env() so that the host keys are
    found (the plugin reads ~/.ssh/known_hosts only)."""
    lines = [
        "---",
        "# Test fleet made by tests/fleet/netns_fleet.py over paramiko: prefix %s, subnet %s, bridge %s."
        % (fleet.prefix, fleet.subnet, fleet.bridge),
        "# Host keys: %s; run ansible-playbook with HOME=%s (Fleet.paramiko_env())."
        % (fleet.paramiko_known_hosts_path, fleet.paramiko_home),
        "all:",
        "  vars:",
        "    ansible_connection: paramiko",
        "    ansible_user: root",
        "    ansible_paramiko_private_key_file: %s" % yaml_string(fleet.key_path),
        "    ansible_paramiko_host_key_checking: true",
        "    ansible_paramiko_timeout: 10",
        "    ansible_python_interpreter: %s" % yaml_string(fleet.python),
        "  children:",
    ]
    return "\n".join(lines + _inventory_hosts(fleet)) + "\n"


def render_inventory(fleet: "Fleet") -> str:
    lines = [
        "---",
        "# Test fleet made by tests/fleet/netns_fleet.py: prefix %s, subnet %s, bridge %s."
        % (fleet.prefix, fleet.subnet, fleet.bridge),
        "# Tear it down with: python tests/fleet/netns_fleet.py down --dir %s" % fleet.directory,
        "all:",
        "  vars:",
        "    ansible_connection: ssh",
        "    ansible_user: root",
        "    ansible_ssh_private_key_file: %s" % yaml_string(fleet.key_path),
        "    ansible_ssh_common_args: %s" % yaml_string(" ".join(fleet.ssh_options())),
        "    ansible_control_path_dir: %s" % yaml_string(fleet.control_path_dir),
        "    ansible_python_interpreter: %s" % yaml_string(fleet.python),
        "  children:",
    ]
    return "\n".join(lines + _inventory_hosts(fleet)) + "\n"


def render_sshd_config(fleet: "Fleet", host: dict) -> str:
    folder = fleet.host_dir(host["name"])
    return "\n".join([
        "# sshd of test host %s (network namespace %s), written by tests/fleet/netns_fleet.py" % (host["name"], host["namespace"]),
        "ListenAddress %s" % host["address"],
        "Port %d" % SSH_PORT,
        'HostKey "%s"' % os.path.join(folder, "ssh_host_ed25519_key"),
        'PidFile "%s"' % os.path.join(folder, "sshd.pid"),
        'AuthorizedKeysFile "%s"' % fleet.authorized_keys_path,
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "# The fleet directory may lie under /tmp (world-writable), which StrictModes would refuse for AuthorizedKeysFile.",
        "StrictModes no",
        "UseDNS no",
        "PrintMotd no",
        "# Ansible opens many connections at once (one per fork, plus its ControlPersist masters).",
        "MaxStartups 100:30:200",
        "MaxSessions 100",
        "Subsystem sftp internal-sftp",
        "LogLevel VERBOSE",
        "",
    ])


def _read_text(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def process_start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), None when it does not run."""
    text = _read_text("/proc/%d/stat" % pid)
    if text is None:
        return None
    try:
        return int(text.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return None


def owner_path(prefix: str) -> str:
    return os.path.join(OWNERS_DIR, prefix + ".json")


def read_owner(prefix: str) -> dict | None:
    """The owner record of a prefix's names, None when there is none (or it cannot be read as one)."""
    text = _read_text(owner_path(prefix))
    try:
        owner = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return owner if isinstance(owner, dict) else None


def owner_alive(owner: dict) -> bool:
    """Whether the owner of a fleet's names still holds them: its process runs (same pid, same start, same boot),
    or, for a fleet made by the up command, its directory still records it up under the same prefix."""
    if owner.get("pid") is not None:
        return (owner.get("boot_id") == _read_text(BOOT_ID_PATH) and isinstance(owner.get("pid"), int)
                and process_start_ticks(owner["pid"]) == owner.get("pid_start_ticks"))
    text = _read_text(os.path.join(str(owner.get("directory")), STATE_FILE))
    try:
        state = json.loads(text) if text is not None else {}
    except ValueError:
        return False
    return isinstance(state, dict) and state.get("prefix") == owner.get("prefix") and state.get("state") in ("building", "up")


class Fleet:
    """N test hosts in network namespaces with their own sshd; see the module's docstring."""

    def __init__(self, directory, hosts=2, rack_size=2, unreachable=0, prefix=None, python=None, sshd=None,
                 ready_timeout_s=20.0, prefix_is_hint=False, owned_by_process=True):
        self.directory = os.path.abspath(str(directory))
        self.host_count = int(hosts)
        self.rack_size = int(rack_size)
        self.unreachable_count = int(unreachable)
        self.prefix_given = prefix is not None and not prefix_is_hint
        self.owned_by_process = bool(owned_by_process)
        self.prefix = prefix or default_prefix()
        self.python = python or sys.executable
        self.sshd = sshd or SSHD
        self.ready_timeout_s = float(ready_timeout_s)
        self.subnet = None
        self.hosts = []
        self.state = "new"
        self._ip = None
        self._claimed = False
        self._wedged = []  # the wedged sshd processes this object started (reaped at down)

    # ----- paths -----
    @property
    def bridge(self) -> str:
        return self.prefix + "br"

    @property
    def key_path(self) -> str:
        return os.path.join(self.directory, "id_ed25519")

    @property
    def authorized_keys_path(self) -> str:
        return os.path.join(self.directory, "authorized_keys")

    @property
    def known_hosts_path(self) -> str:
        return os.path.join(self.directory, "known_hosts")

    @property
    def inventory_path(self) -> str:
        return os.path.join(self.directory, "inventory.yml")

    @property
    def control_path_dir(self) -> str:
        return os.path.join(self.directory, "cp")

    @property
    def paramiko_home(self) -> str:
        """HOME for ansible-playbook over paramiko: its .ssh/known_hosts holds the fleet's host keys."""
        return os.path.join(self.directory, PARAMIKO_HOME)

    @property
    def paramiko_known_hosts_path(self) -> str:
        return os.path.join(self.paramiko_home, ".ssh", "known_hosts")

    @property
    def paramiko_inventory_path(self) -> str:
        return os.path.join(self.directory, "inventory-paramiko.yml")

    def paramiko_env(self, base=None) -> dict:
        """The environment for ansible-playbook over paramiko: base (default os.environ) with HOME the fleet's
        paramiko home (host keys from its .ssh/known_hosts, no private key there to find), host-key checking forced
        on, no auto-adding, no host keys recorded, no SSH agent."""
        env = {key: value for key, value in (os.environ if base is None else base).items()
               if key not in PARAMIKO_ENV_DROPPED}
        env.update(PARAMIKO_ENV, HOME=self.paramiko_home)
        return env

    def host_dir(self, name: str) -> str:
        return os.path.join(self.directory, "hosts", name)

    def host(self, name: str) -> dict:
        for host in self.hosts:
            if host["name"] == name:
                return host
        raise KeyError("no host %r in fleet %s (hosts: %s)" % (name, self.prefix, ", ".join(h["name"] for h in self.hosts)))

    @property
    def names(self) -> list:
        return [host["name"] for host in self.hosts]

    @property
    def live_hosts(self) -> list:
        return [host for host in self.hosts if host["namespace"]]

    def ssh_options(self) -> list:
        return ["-o", "UserKnownHostsFile=%s" % self.known_hosts_path, "-o", "StrictHostKeyChecking=yes",
                "-o", "GlobalKnownHostsFile=/dev/null", "-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=10",
                "-o", "BatchMode=yes"]

    def ssh_argv(self, name: str, *command: str) -> list:
        """argv of `ssh` to run command (an argv list) on a host as root, with the fleet's key and known_hosts and no
        control master. ssh hands the remote side one command line, so the words are quoted for the remote shell."""
        return [find_tool("ssh") or "ssh", "-i", self.key_path] + self.ssh_options() + [
            "-o", "ControlMaster=no", "-o", "ControlPath=none", "-p", str(SSH_PORT),
            "root@%s" % self.host(name)["address"], "--", shlex.join(command)]

    # ----- commands -----
    def _tool_ip(self) -> str:
        if self._ip is None:
            self._ip = find_tool("ip")
            if self._ip is None:
                raise FleetUnavailable("the ip command (Debian package iproute2) is not installed")
        return self._ip

    def _run(self, argv, check=True, timeout=COMMAND_TIMEOUT_S):
        try:
            completed = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise FleetError("%s did not finish within %d s" % (" ".join(argv), timeout)) from exc
        if check and completed.returncode != 0:
            raise FleetError("%s exited with %d: %s" % (" ".join(argv), completed.returncode,
                                                        (completed.stderr or completed.stdout).strip()))
        return completed

    def _ip_cmd(self, *args, check=True):
        return self._run([self._tool_ip()] + list(args), check=check)

    # ----- building -----
    def _plan(self) -> None:
        if not PREFIX_RE.match(self.prefix):
            raise FleetError("prefix %r must be 2 to 8 lower-case letters or digits, starting with a letter" % self.prefix)
        if self.host_count < 1 or self.host_count + self.unreachable_count > MAX_HOSTS or self.unreachable_count < 0:
            raise FleetError("a fleet has 1 to %d hosts in all, not %d (+%d unreachable)"
                             % (MAX_HOSTS, self.host_count, self.unreachable_count))
        if self.rack_size < 1:
            raise FleetError("rack_size must be at least 1, not %d" % self.rack_size)
        if re.search(r'[\s"\\]', self.directory):
            raise FleetError("the fleet directory %r must not contain white space, quotes or backslashes" % self.directory)
        if len(self.control_path_dir) + 12 > SOCKET_PATH_MAX:
            raise FleetError("the fleet directory %s is too long for SSH control sockets (unix socket paths stop at "
                             "108 bytes); choose a shorter one" % self.directory)
        hosts = []
        for index in range(self.host_count + self.unreachable_count):
            live = index < self.host_count
            name = "%s-%s%02d" % (self.prefix, "n" if live else "u", (index if live else index - self.host_count) + 1)
            hosts.append({"name": name, "namespace": name if live else None, "veth": "%sv%d" % (self.prefix, index) if live else None,
                          "rack": rack_name(index // self.rack_size), "address": None, "reachable": live})
        self.hosts = hosts

    def up(self) -> "Fleet":
        reason = unavailable_reason(self.sshd)
        if reason:
            raise FleetUnavailable(reason)
        self._plan()
        os.makedirs(self.directory, exist_ok=True)
        if os.path.exists(os.path.join(self.directory, STATE_FILE)):
            previous = Fleet.load(self.directory)
            if previous.state == "up":
                raise FleetError("a fleet is already up in %s (prefix %s); take it down first" % (self.directory, previous.prefix))
        try:
            self._claim_names_and_subnet()
            self._write_keys()
            for host in self.live_hosts:
                self._make_namespace(host)
                self._start_sshd(host)
            for host in self.live_hosts:
                self.wait_for_sshd(host["name"])
            self._write_known_hosts()
            with open(self.inventory_path, "w") as handle:
                handle.write(render_inventory(self))
            with open(self.paramiko_inventory_path, "w") as handle:
                handle.write(render_paramiko_inventory(self))
            self.state = "up"
            self.save()
        except BaseException:
            if self._claimed:  # never touch names that another fleet holds
                self._teardown(strict=False)
                self.state = "failed"
                self.save()
            raise
        return self

    def _claim_names_and_subnet(self) -> None:
        os.makedirs(os.path.dirname(LOCK_PATH), exist_ok=True)
        with open(LOCK_PATH, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self._reclaim_stale_owners()
                for unused_attempt in range(20):
                    if not self._names_taken():
                        break
                    if self.prefix_given:
                        raise FleetError("names of prefix %s (bridge %s or namespaces %s-*) are held %s" % (
                            self.prefix, self.bridge, self.prefix, self._whose_names()))
                    self.prefix = default_prefix()
                    self._plan()
                else:
                    raise FleetError("could not find a free fleet prefix")
                used = parse_networks(self._ip_cmd("-4", "-o", "addr", "show").stdout,
                                      self._ip_cmd("-4", "route", "show", "table", "all").stdout)
                self.subnet = free_subnet(used)
                bridge_ip = "%s/24" % self.subnet[1]
                live = 0
                ghost = 0
                for host in self.hosts:
                    if host["namespace"]:
                        host["address"] = str(self.subnet[FIRST_HOST_OCTET + live])
                        live += 1
                    else:
                        host["address"] = str(self.subnet[LAST_GHOST_OCTET - ghost])
                        ghost += 1
                self.state = "building"
                self._claimed = True
                self.save()
                self._write_owner()
                try:
                    self._ip_cmd("link", "add", self.bridge, "type", "bridge")
                except FleetError as exc:
                    raise FleetUnavailable("cannot make a bridge (is this a container without CAP_NET_ADMIN?): %s" % exc) from exc
                self._ip_cmd("addr", "add", bridge_ip, "dev", self.bridge)
                self._ip_cmd("link", "set", self.bridge, "up")
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _whose_names(self) -> str:
        owner = read_owner(self.prefix)
        if owner is None:
            return ("by no recorded owner (made by hand, or by an older netns_fleet): take that fleet down with the down command, or remove the names with "
                    "'netns_fleet.py reclaim --prefix %s', or choose another prefix" % self.prefix)
        return "by a live fleet (%s): take it down first or choose another prefix" % (
            "process %s" % owner["pid"] if owner.get("pid") is not None else "directory %s" % owner.get("directory"))

    def _write_owner(self) -> None:
        owner = {"prefix": self.prefix, "directory": self.directory, "pid": None}
        if self.owned_by_process:
            owner.update(pid=os.getpid(), pid_start_ticks=process_start_ticks(os.getpid()), boot_id=_read_text(BOOT_ID_PATH))
        os.makedirs(OWNERS_DIR, exist_ok=True)
        path = owner_path(self.prefix)
        descriptor = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(descriptor, "w") as handle:
            json.dump(owner, handle)
        os.replace(path + ".tmp", path)

    def _remove_owner(self) -> None:
        owner = read_owner(self.prefix)
        if owner is not None and owner.get("directory") == self.directory:
            try:
                os.unlink(owner_path(self.prefix))
            except FileNotFoundError:
                pass

    def _remove_names_of(self, prefix: str) -> list:
        """Kill every process in the prefix's namespaces and delete them, their veths and the bridge; the problems left."""
        problems = []
        for namespace in self._ip_cmd("netns", "list", check=False).stdout.split():
            if not namespace.startswith(prefix + "-"):
                continue
            try:
                self._kill_all_in(namespace)
            except FleetError as exc:
                problems.append(str(exc))
            completed = self._ip_cmd("netns", "delete", namespace, check=False)
            if completed.returncode != 0:
                problems.append("ip netns delete %s: %s" % (namespace, completed.stderr.strip()))
        links = self._ip_cmd("-o", "link", "show", check=False).stdout
        veth_re = re.compile(r"^%sv\d+$" % re.escape(prefix))
        for line in links.splitlines():
            fields = line.split(":")
            name = fields[1].strip().split("@")[0] if len(fields) > 1 else ""
            if veth_re.match(name) or name == prefix + "br":
                completed = self._ip_cmd("link", "delete", name, check=False)
                if completed.returncode != 0 and self._ip_cmd("link", "show", name, check=False).returncode == 0:
                    problems.append("ip link delete %s: %s" % (name, completed.stderr.strip()))
        try:
            os.unlink(owner_path(prefix))
        except FileNotFoundError:
            pass
        return problems

    def _reclaim_stale_owners(self) -> None:
        """Remove the names of every fleet whose owner is gone (called under the lock)."""
        try:
            entries = sorted(os.listdir(OWNERS_DIR))
        except OSError:
            return
        for entry in entries:
            prefix = entry[:-len(".json")] if entry.endswith(".json") else None
            if not prefix or not PREFIX_RE.match(prefix):
                continue
            owner = read_owner(prefix)
            if owner is not None and not owner_alive(owner):
                self._remove_names_of(prefix)

    def reclaim(self) -> list:
        """Remove the names of this fleet's prefix when no live owner holds them; the problems left. Refused while
        an owner lives."""
        os.makedirs(os.path.dirname(LOCK_PATH), exist_ok=True)
        with open(LOCK_PATH, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                owner = read_owner(self.prefix)
                if owner is not None and owner_alive(owner):
                    raise FleetError("names of prefix %s are held %s" % (self.prefix, self._whose_names()))
                return self._remove_names_of(self.prefix)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _names_taken(self) -> bool:
        if self._ip_cmd("link", "show", self.bridge, check=False).returncode == 0:
            return True
        namespaces = self._ip_cmd("netns", "list", check=False).stdout.split()
        return any(name.startswith(self.prefix + "-") for name in namespaces)

    def _write_keys(self) -> None:
        keygen = find_tool("ssh-keygen")
        os.makedirs(self.control_path_dir, mode=0o700, exist_ok=True)
        for path in (self.key_path, self.key_path + ".pub"):
            if os.path.exists(path):
                os.unlink(path)
        self._run([keygen, "-q", "-t", "ed25519", "-N", "", "-C", "gpufleet-test-fleet-%s" % self.prefix, "-f", self.key_path])
        with open(self.key_path + ".pub") as handle:
            client_key = handle.read()
        with open(self.authorized_keys_path, "w") as handle:
            handle.write(client_key)
        os.chmod(self.authorized_keys_path, 0o600)
        for host in self.live_hosts:
            folder = self.host_dir(host["name"])
            os.makedirs(folder, mode=0o700, exist_ok=True)
            key = os.path.join(folder, "ssh_host_ed25519_key")
            for path in (key, key + ".pub"):
                if os.path.exists(path):
                    os.unlink(path)
            self._run([keygen, "-q", "-t", "ed25519", "-N", "", "-C", host["name"], "-f", key])
            with open(os.path.join(folder, "sshd_config"), "w") as handle:
                handle.write(render_sshd_config(self, host))

    def _make_namespace(self, host: dict) -> None:
        namespace = host["namespace"]
        try:
            self._ip_cmd("netns", "add", namespace)
        except FleetError as exc:
            raise FleetUnavailable("cannot make network namespace %s: %s" % (namespace, exc)) from exc
        self._ip_cmd("link", "add", host["veth"], "type", "veth", "peer", "name", "eth0", "netns", namespace)
        self._ip_cmd("link", "set", host["veth"], "master", self.bridge)
        self._ip_cmd("link", "set", host["veth"], "up")
        self._ip_cmd("-n", namespace, "link", "set", "lo", "up")
        self._ip_cmd("-n", namespace, "addr", "add", "%s/24" % host["address"], "dev", "eth0")
        self._ip_cmd("-n", namespace, "link", "set", "eth0", "up")
        self._ip_cmd("-n", namespace, "route", "add", "default", "via", str(self.subnet[1]))

    def _start_sshd(self, host: dict) -> None:
        if not os.path.isdir("/run/sshd"):
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        folder = self.host_dir(host["name"])
        pidfile = os.path.join(folder, "sshd.pid")
        if os.path.exists(pidfile):
            os.unlink(pidfile)
        argv = [self._tool_ip(), "netns", "exec", host["namespace"], self.sshd,
                "-f", os.path.join(folder, "sshd_config"), "-E", os.path.join(folder, "sshd.log")]
        completed = self._run(argv, check=False)
        if completed.returncode != 0:
            raise FleetError("sshd of host %s did not start (exit %d): %s; its log: %s"
                             % (host["name"], completed.returncode, (completed.stderr or completed.stdout).strip(),
                                self._log_tail(host)))

    def _log_tail(self, host: dict) -> str:
        try:
            with open(os.path.join(self.host_dir(host["name"]), "sshd.log")) as handle:
                lines = handle.read().splitlines()[-5:]
        except OSError as exc:
            return "(no log: %s)" % exc.strerror
        return " | ".join(lines) or "(empty)"

    def wait_for_sshd(self, name: str, timeout_s: float | None = None) -> None:
        """Wait until the host's sshd accepts a TCP connection from the root namespace."""
        host = self.host(name)
        timeout_s = self.ready_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        last_error = "not tried"
        while True:
            try:
                with socket.create_connection((host["address"], SSH_PORT), timeout=1.0):
                    return
            except OSError as exc:
                last_error = exc.strerror or str(exc)
            if time.monotonic() >= deadline:
                raise FleetError("sshd of host %s (namespace %s) does not accept connections on %s:%d after %.0f s (%s); "
                                 "its log: %s" % (name, host["namespace"], host["address"], SSH_PORT, timeout_s, last_error,
                                                  self._log_tail(host)))
            time.sleep(0.1)

    def _write_known_hosts(self) -> None:
        """known_hosts for OpenSSH (name and address) and, in the paramiko home, for paramiko (the address as
        paramiko looks it up: it connects to ansible_host and never sees the inventory name)."""
        lines = []
        paramiko_lines = []
        for host in self.live_hosts:
            with open(os.path.join(self.host_dir(host["name"]), "ssh_host_ed25519_key.pub")) as handle:
                key_type, key = handle.read().split()[:2]
            lines.append("%s,%s %s %s" % (host["name"], host["address"], key_type, key))
            paramiko_lines.append("%s %s %s" % (known_hosts_host(host["address"], SSH_PORT), key_type, key))
        with open(self.known_hosts_path, "w") as handle:
            handle.write("\n".join(lines) + "\n")
        ssh_dir = os.path.dirname(self.paramiko_known_hosts_path)
        os.makedirs(ssh_dir, mode=0o700, exist_ok=True)
        os.chmod(self.paramiko_home, 0o700)
        os.chmod(ssh_dir, 0o700)
        descriptor = os.open(self.paramiko_known_hosts_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                             0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write("\n".join(paramiko_lines) + "\n")

    # ----- state -----
    def save(self) -> None:
        state = {"prefix": self.prefix, "subnet": str(self.subnet) if self.subnet else None, "bridge": self.bridge,
                 "state": self.state, "rack_size": self.rack_size, "python": self.python, "sshd": self.sshd,
                 "hosts": self.hosts}
        path = os.path.join(self.directory, STATE_FILE)
        with open(path + ".tmp", "w") as handle:
            json.dump(state, handle, indent=2)
        os.replace(path + ".tmp", path)

    @classmethod
    def load(cls, directory) -> "Fleet":
        path = os.path.join(os.path.abspath(str(directory)), STATE_FILE)
        try:
            with open(path) as handle:
                state = json.load(handle)
        except OSError as exc:
            raise FleetError("no fleet in %s: %s" % (directory, exc.strerror)) from exc
        fleet = cls(directory, hosts=sum(1 for h in state["hosts"] if h["namespace"]), rack_size=state["rack_size"],
                    prefix=state["prefix"], python=state["python"], sshd=state["sshd"])
        fleet.hosts = state["hosts"]
        fleet.subnet = ipaddress.ip_network(state["subnet"]) if state["subnet"] else None
        fleet.state = state["state"]
        return fleet

    # ----- processes inside a namespace -----
    @staticmethod
    def processes_in(namespace: str) -> list:
        """PIDs of the live processes whose network namespace is the named one."""
        try:
            target = os.stat(os.path.join("/run/netns", namespace))
        except OSError:
            return []
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                found = os.stat("/proc/%s/ns/net" % entry)
            except OSError:
                continue
            if (found.st_dev, found.st_ino) == (target.st_dev, target.st_ino) and not _is_zombie(int(entry)):
                pids.append(int(entry))
        return pids

    def _kill_all_in(self, namespace: str, grace_s: float = 3.0) -> None:
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            pids = self.processes_in(namespace)
            if not pids:
                return
            for pid in pids:
                _signal(pid, sig)
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and self.processes_in(namespace):
                time.sleep(0.05)
        left = self.processes_in(namespace)
        if left:
            raise FleetError("processes %s in namespace %s survived SIGKILL" % (left, namespace))

    def sshd_pid(self, name: str) -> int | None:
        """PID of the host's listening sshd, checked to live in the host's namespace; None when it is not running."""
        host = self.host(name)
        try:
            with open(os.path.join(self.host_dir(name), "sshd.pid")) as handle:
                pid = int(handle.read().strip())
        except (OSError, ValueError):
            return None
        if not host["namespace"] or pid not in self.processes_in(host["namespace"]):
            return None
        return pid

    # ----- faults -----
    def kill_sshd(self, name: str, sig: int = signal.SIGKILL, sessions: bool = False, timeout_s: float = 10.0) -> None:
        """Stop the host's listening sshd: new SSH connections are then refused. Open sessions (and Ansible's
        ControlPersist masters) survive unless sessions=True, which kills every process in the host's namespace."""
        host = self.host(name)
        if not host["namespace"]:
            raise FleetError("host %s has no namespace (it is unreachable already)" % name)
        if sessions:
            self._kill_all_in(host["namespace"])
            return
        pid = self.sshd_pid(name)
        if pid is None:
            return
        _signal(pid, sig)
        deadline = time.monotonic() + timeout_s
        while pid in self.processes_in(host["namespace"]):
            if time.monotonic() >= deadline:
                raise FleetError("sshd %d of host %s is still running %.0f s after signal %d" % (pid, name, timeout_s, sig))
            time.sleep(0.05)
        self.wait_until_refused(name, deadline)

    def wait_until_refused(self, name: str, deadline: float) -> None:
        """Wait until a TCP connection to the host's port 22 is refused. The listener's exit is not enough: a child
        sshd forked for a connection a moment before still holds the listening socket until it closes it, and a
        connection queued there meanwhile is reset, not refused."""
        host = self.host(name)
        while True:
            try:
                with socket.create_connection((host["address"], SSH_PORT), timeout=1.0):
                    outcome = "accepted"
            except ConnectionRefusedError:
                return
            except OSError as exc:
                outcome = exc.strerror or str(exc)
            if time.monotonic() >= deadline:
                raise FleetError("host %s still takes connections on %s:%d after its sshd was stopped (last attempt: %s)"
                                 % (name, host["address"], SSH_PORT, outcome))
            time.sleep(0.05)

    def start_sshd(self, name: str) -> None:
        """Start the host's sshd again (after kill_sshd) and wait until it accepts connections."""
        host = self.host(name)
        if not host["namespace"]:
            raise FleetError("host %s has no namespace; it cannot run an sshd" % name)
        if self.sshd_pid(name) is None:
            self._start_sshd(host)
        self.wait_for_sshd(name)

    def wedge_sshd(self, name: str) -> None:
        """Put a wedged sshd on the host's port 22 in place of its sshd (which is stopped, with every session): it
        accepts connections and sends its banner, then stays silent. OpenSSH's ConnectTimeout does not end that."""
        host = self.host(name)
        self.kill_sshd(name, sessions=True)
        log = open(os.path.join(self.host_dir(name), "wedged-sshd.log"), "ab")
        with log:
            self._wedged.append(subprocess.Popen(
                [self._tool_ip(), "netns", "exec", host["namespace"], self.python, "-c", WEDGED_SSHD, str(SSH_PORT)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True))
        self.wait_for_sshd(name)

    def make_unreachable(self, name: str) -> None:
        """Kill everything in the host's namespace and delete it (its veth goes with it). The host stays in the
        inventory; connections to its address then fail (no route to host: nothing answers ARP on the bridge)."""
        host = self.host(name)
        if host["namespace"]:
            self._kill_all_in(host["namespace"])
            self._ip_cmd("netns", "delete", host["namespace"])
            self._wait_link_gone(host["veth"])
            # Forget the host's MAC so a connection fails at once (no route to host) instead of timing out on a stale entry.
            self._ip_cmd("neigh", "flush", "to", host["address"], "dev", self.bridge, check=False)
        host["namespace"] = None
        host["veth"] = None
        host["reachable"] = False
        self.save()

    # ----- tearing down -----
    def down(self) -> None:
        """Tear the fleet down completely: SSH control masters, every process in each namespace, the namespaces,
        the veths and the bridge. Raises FleetError when something is left."""
        if self.state == "new":  # up() never claimed a name: nothing here is this fleet's
            return
        self._teardown(strict=True)
        for process in self._wedged:
            process.wait(timeout=COMMAND_TIMEOUT_S)  # killed with everything in its namespace
        self.state = "down"
        self.save()

    def _teardown(self, strict: bool) -> None:
        problems = []
        self._stop_control_masters()
        for host in self.hosts:
            namespace = host["namespace"]
            if not namespace:
                continue
            try:
                self._kill_all_in(namespace)
            except FleetError as exc:
                problems.append(str(exc))
            if os.path.exists(os.path.join("/run/netns", namespace)):
                completed = self._ip_cmd("netns", "delete", namespace, check=False)
                if completed.returncode != 0:
                    problems.append("ip netns delete %s: %s" % (namespace, completed.stderr.strip()))
            if host["veth"]:
                self._ip_cmd("link", "delete", host["veth"], check=False)
                if not self._wait_link_gone(host["veth"]):
                    problems.append("veth %s is still there" % host["veth"])
        if self._ip_cmd("link", "show", self.bridge, check=False).returncode == 0:
            completed = self._ip_cmd("link", "delete", self.bridge, check=False)
            if completed.returncode != 0:
                problems.append("ip link delete %s: %s" % (self.bridge, completed.stderr.strip()))
        namespaces = self._ip_cmd("netns", "list", check=False).stdout.split()
        problems += ["namespace %s is still there" % h["namespace"] for h in self.hosts if h["namespace"] in namespaces]
        if not problems:
            self._remove_owner()
        if strict and problems:
            raise FleetError("fleet %s was not torn down completely: %s" % (self.prefix, "; ".join(problems)))

    def _wait_link_gone(self, link: str, timeout_s: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while self._ip_cmd("link", "show", link, check=False).returncode == 0:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def _stop_control_masters(self) -> None:
        """Ask Ansible's ControlPersist ssh masters (sockets in the fleet's control path dir) to exit."""
        ssh = find_tool("ssh")
        if ssh is None or not os.path.isdir(self.control_path_dir):
            return
        for entry in sorted(os.listdir(self.control_path_dir)):
            path = os.path.join(self.control_path_dir, entry)
            self._run([ssh, "-o", "ControlPath=%s" % path, "-O", "exit", "fleet-control-master"], check=False, timeout=10)


def _is_zombie(pid: int) -> bool:
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Make or tear down a test fleet of network namespaces with sshd.")
    commands = parser.add_subparsers(dest="command", required=True)
    up_parser = commands.add_parser("up", help="make the fleet and write DIR/inventory.yml")
    up_parser.add_argument("--hosts", type=int, required=True, help="how many hosts (each a namespace with an sshd)")
    up_parser.add_argument("--dir", required=True, help="directory for keys, sshd configs, the inventory and the state")
    up_parser.add_argument("--rack-size", type=int, default=2, help="hosts per rack group (rack_a, rack_b, ...)")
    up_parser.add_argument("--unreachable", type=int, default=0, help="extra inventory hosts with no namespace behind them")
    up_parser.add_argument("--prefix", default=None, help="name prefix (2-8 lower-case letters/digits); default: unique")
    up_parser.add_argument("--python", default=None, help="ansible_python_interpreter for the hosts (default: this Python)")
    down_parser = commands.add_parser("down", help="tear down the fleet recorded in DIR")
    down_parser.add_argument("--dir", required=True)
    reclaim_parser = commands.add_parser("reclaim", help="remove the names of a prefix whose fleet is gone (its process "
                                         "killed, its directory deleted); refused while its owner lives")
    reclaim_parser.add_argument("--prefix", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            fleet = Fleet(args.dir, hosts=args.hosts, rack_size=args.rack_size, unreachable=args.unreachable,
                          prefix=args.prefix, python=args.python, owned_by_process=False).up()
            print("fleet %s up: %d host(s) on %s (bridge %s)" % (fleet.prefix, len(fleet.live_hosts), fleet.subnet, fleet.bridge))
            for host in fleet.hosts:
                where = "namespace " + host["namespace"] if host["namespace"] else "unreachable"
                print("  %-14s %-15s %s %s" % (host["name"], host["address"], host["rack"], where))
            print("inventory: %s" % fleet.inventory_path)
            print("over paramiko: HOME=%s, inventory %s" % (fleet.paramiko_home, fleet.paramiko_inventory_path))
        elif args.command == "reclaim":
            if not PREFIX_RE.match(args.prefix):
                raise FleetError("prefix %r is not 2-8 lower-case letters and digits starting with a letter" % args.prefix)
            problems = Fleet(tempfile.gettempdir(), prefix=args.prefix).reclaim()
            if problems:
                raise FleetError("names of prefix %s were not all removed: %s" % (args.prefix, "; ".join(problems)))
            print("names of prefix %s removed" % args.prefix)
        else:
            fleet = Fleet.load(args.dir)
            fleet.down()
            print("fleet %s down" % fleet.prefix)
    except FleetError as exc:
        print("netns_fleet: %s" % exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
