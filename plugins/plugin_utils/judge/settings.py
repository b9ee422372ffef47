# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's settings: configured values compared with the host's previous run (drift) and with its SKU's other hosts.

A probe's declaration reads its settings (versions, the kernel command line, PCIe MaxPayload on each bridge,
vm.swappiness ...) into Setting records; the judge knows no setting by name. A changed setting is a warn with the
values before and after: a tuning change is information, not a fault.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..result_fields import is_unavailable, unavailable_reason
from .model import Check

# Values longer than this are shown by their length in a check's words (a kernel command line).
SHOWN_CHARACTERS = 60
# The fewest hosts of one SKU whose values are compared for a majority.
MAJORITY_MIN_HOSTS = 3


@dataclass(frozen=True)
class Setting:
    """One configured value: setting_id names it (its drift check is drift.<setting_id>), where says on what (""
    for the host, else e.g. "bridge 0000:16:00.0"), value is a JSON scalar or an unavailable field."""

    setting_id: str
    words: str
    value: Any
    where: str = ""
    unit: str = ""
    # False for a value every host has its own of (the command line's root= and BOOT_IMAGE=): not held to a majority.
    fleet_compared: bool = True


SettingsFunction = Callable[[Dict[str, Any]], List[Setting]]


def _comparable(value: Any) -> bool:
    return value is not None and not is_unavailable(value)


def _shown(value: Any, unit: str = "") -> str:
    text = str(value)
    if len(text) > SHOWN_CHARACTERS:
        return "(%d characters)" % len(text)
    return "%s %s" % (text, unit) if unit else text


def _change(old: Any, new: Any, unit: str) -> str:
    """old -> new; two long texts of words (a command line) by the words that went and came."""
    if isinstance(old, str) and isinstance(new, str) and max(len(old), len(new)) > SHOWN_CHARACTERS:
        before, after = old.split(), new.split()
        gone = [word for word in before if word not in after]
        came = [word for word in after if word not in before]
        if gone or came:
            return " ".join(["-%s" % word for word in gone] + ["+%s" % word for word in came])
    return "%s -> %s" % (_shown(old, unit), _shown(new, unit))


def _by_id(settings: Iterable[Setting]) -> Dict[str, List[Setting]]:
    grouped: Dict[str, List[Setting]] = {}
    for setting in settings:
        grouped.setdefault(setting.setting_id, []).append(setting)
    return grouped


def _where(setting: Setting) -> str:
    return "%s: " % setting.where if setting.where else ""


def settings_drift(host: str, probe: str, current: Sequence[Setting], earlier: Sequence[Setting], earlier_run: str) -> List[Check]:
    """One drift check per setting id: pass unchanged, warn changed (each value before -> after, where), skip when
    nothing of it is comparable. A setting of one run only (a bridge that came or went) is a change."""
    checks = []
    now, before = _by_id(current), _by_id(earlier)
    for setting_id in sorted(set(now) | set(before)):
        new = {setting.where: setting for setting in now.get(setting_id, [])}
        old = {setting.where: setting for setting in before.get(setting_id, [])}
        sample = (now.get(setting_id) or before.get(setting_id))[0]
        changes, unknown, same = [], [], []
        for where in sorted(set(new) | set(old)):
            after, earlier_setting = new.get(where), old.get(where)
            if (after is None or earlier_setting is None) and not where:
                unknown.append("unknown in %s" % ("this run" if after is None else "that run"))
            elif after is None or earlier_setting is None:
                present = after or earlier_setting
                changes.append("%s%s (%s)" % (_where(present), "new" if after else "gone",
                                              _shown(present.value, present.unit) if _comparable(present.value) else "unknown"))
            elif not (_comparable(after.value) and _comparable(earlier_setting.value)):
                missing_now = not _comparable(after.value)
                unknown.append("%sunknown in %s (%s)" % (_where(after), "this run" if missing_now else "that run", unavailable_reason(
                    after.value if missing_now else earlier_setting.value)))
            elif after.value != earlier_setting.value:
                changes.append("%s%s" % (_where(after), _change(earlier_setting.value, after.value, after.unit)))
            else:
                same.append(after)
        check_id = "drift.%s" % setting_id
        fields: Dict[str, Any] = {"reference_source": "run %s" % earlier_run, "threshold": "unchanged"}
        if len(new) <= 1 and len(old) <= 1:
            only_new, only_old = next(iter(new.values()), None), next(iter(old.values()), None)
            fields["value"] = only_new.value if only_new is not None and _comparable(only_new.value) else None
            fields["reference"] = only_old.value if only_old is not None and _comparable(only_old.value) else None
        else:
            fields.update(value=len(changes), reference=0, unit="changed")
        if changes:
            checks.append(Check(id=check_id, host=host, probe=probe, status="warn", reason="%s changed since run %s: %s%s" % (
                sample.words, earlier_run, "; ".join(changes), "; not comparable: %s" % "; ".join(unknown) if unknown else ""),
                **fields))
        elif not same:
            checks.append(Check(id=check_id, host=host, probe=probe, status="skip", reason="%s not comparable with run %s: %s" % (
                sample.words, earlier_run, "; ".join(unknown) or "unknown in both runs"), **fields))
        else:
            if len(same) == 1 and not same[0].where:
                words = "%s %s, unchanged since run %s" % (sample.words, _shown(same[0].value, same[0].unit), earlier_run)
            else:
                values = sorted({_shown(setting.value, setting.unit) for setting in same})
                words = "%s unchanged since run %s on %d (%s)" % (sample.words, earlier_run, len(same), ", ".join(values))
            if unknown:
                words += "; not comparable: %s" % "; ".join(unknown)
            checks.append(Check(id=check_id, host=host, probe=probe, status="pass", reason=words, **fields))
    return checks


def settings_not_compared(host: str, probe: str, current: Sequence[Setting], reason: str) -> List[Check]:
    """The drift checks of settings whose earlier result cannot be read: each a skip that says why."""
    return [Check(id="drift.%s" % setting_id, host=host, probe=probe, status="skip", reason=reason)
            for setting_id in sorted(_by_id(current))]


def host_value(settings: Sequence[Setting]) -> Optional[str]:
    """A host's value of one setting id as one text (the distinct values of its devices, sorted); None if unknown."""
    values = sorted({_shown(setting.value, setting.unit) for setting in settings if _comparable(setting.value)})
    return ", ".join(values) if values else None


@dataclass(frozen=True)
class Minority:
    """Hosts of one group whose value of a setting differs from the value most of the group's hosts have."""

    group: str
    setting_id: str
    words: str
    majority_value: str
    majority_hosts: int
    compared_hosts: int
    hosts: Tuple[Tuple[str, str], ...]   # (host, its value)

    def sentence(self) -> str:
        differing = Counter(value for unused_host, value in self.hosts)
        parts = "; ".join("%d of %d %s hosts have %s (%s)" % (count, self.compared_hosts, self.group, value, ", ".join(
            host for host, its_value in self.hosts if its_value == value)) for value, count in sorted(differing.items()))
        return "%s: %s; %d have %s" % (self.words, parts, self.majority_hosts, self.majority_value)

    def to_dict(self) -> Dict[str, Any]:
        return {"group": self.group, "setting_id": self.setting_id, "words": self.words, "majority_value": self.majority_value,
                "majority_hosts": self.majority_hosts, "compared_hosts": self.compared_hosts,
                "hosts": [{"host": host, "value": value} for host, value in self.hosts], "sentence": self.sentence()}


def fleet_minorities(host_settings: Mapping[str, Tuple[str, Sequence[Setting]]]) -> List[Minority]:
    """host_settings: {host: (group, its settings)}. For each group of at least MAJORITY_MIN_HOSTS hosts with a value
    of a setting, the hosts that differ from a value more than half of them share."""
    values: Dict[Tuple[str, str], Dict[str, str]] = {}
    words: Dict[str, str] = {}
    for host, (group, settings) in host_settings.items():
        for setting_id, members in _by_id(setting for setting in settings if setting.fleet_compared).items():
            value = host_value(members)
            if value is not None:
                values.setdefault((group, setting_id), {})[host] = value
                words[setting_id] = members[0].words
    found = []
    for (group, setting_id), by_host in sorted(values.items()):
        if len(by_host) < MAJORITY_MIN_HOSTS:
            continue
        majority, count = Counter(by_host.values()).most_common(1)[0]
        if count * 2 <= len(by_host) or count == len(by_host):
            continue
        differing = tuple(sorted((host, value) for host, value in by_host.items() if value != majority))
        found.append(Minority(group, setting_id, words[setting_id], majority, count, len(by_host), differing))
    return found


def minority_checks(minorities: Iterable[Minority]) -> Dict[str, List[Check]]:
    """{host: [fleet.settings warn]}: each host in a minority, with every setting it differs on."""
    by_host: Dict[str, List[str]] = {}
    for minority in minorities:
        for host, value in minority.hosts:
            by_host.setdefault(host, []).append("%s %s where %d of %d %s hosts have %s" % (
                minority.words, value, minority.majority_hosts, minority.compared_hosts, minority.group, minority.majority_value))
    return {host: [Check(id="fleet.settings", host=host, probe="", status="warn",
                         reason="settings unlike most hosts of its SKU: %s; confirm the difference is intended" % "; ".join(parts),
                         value=len(parts), unit="settings", threshold="the value most hosts of the SKU share")]
            for host, parts in by_host.items()}
