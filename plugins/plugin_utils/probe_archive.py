"""Pack a probe script with the shared probe library and the probe packages into one zip, byte-for-byte reproducible.

The zip holds the probe's script, every .py of the shared library probelib/ and of the probe packages probe_packages/,
the files of probe_packages/<probe>/data/ of that probe only (the precision probe's shipped checkpoint slice: a few MB
that the other probes do not carry), and the probe's parameter spec, plugins/plugin_utils/probes/<probe>/params.json, as
probe_packages/<probe>/params.json (where probelib/params.py reads it). The module on the host unpacks it into the
job's work directory, so a probe reads its data as plain files beside its code.
"""
from __future__ import annotations

import hashlib
import io
import os
import zipfile

from .collection_info import collection_root
from .store.atomic import write_bytes_atomically
from .store.paths import check_probe_name

PROBE_LIBRARY = "probelib"
PROBE_PACKAGES = "probe_packages"
PROBE_DATA = "data"
PARAMS_SPEC = "params.json"
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def probes_dir(root: str | None = None) -> str:
    return os.path.join(root or collection_root(), "probes")


def available_probes(root: str | None = None) -> list[str]:
    directory = probes_dir(root)
    return sorted(entry[:-3] for entry in os.listdir(directory)
                  if entry.endswith(".py") and not entry.startswith("_") and os.path.isfile(os.path.join(directory, entry)))


def _archive_members(directory: str, name: str) -> list[tuple[str, str]]:
    script = os.path.join(directory, name + ".py")
    if not os.path.isfile(script):
        raise FileNotFoundError("no probe named %r in %s (available: %s)"
                                % (name, directory, ", ".join(available_probes(os.path.dirname(directory)))))
    members = [(name + ".py", script)]
    for top in (PROBE_LIBRARY, PROBE_PACKAGES):
        members.extend(_python_members(directory, top))
    return members + _data_members(directory, name) + [_spec_member(directory, name)]


def _python_members(directory: str, top: str) -> list[tuple[str, str]]:
    """Every .py below probes/<top>/, in a fixed order."""
    members = []
    for folder, subfolders, files in os.walk(os.path.join(directory, top)):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for file_name in sorted(files):
            if file_name.endswith(".py"):
                path = os.path.join(folder, file_name)
                members.append((os.path.relpath(path, directory).replace(os.sep, "/"), path))
    return members


def params_spec_path(name: str, root: str | None = None) -> str:
    """The probe's parameter spec on the controller: plugins/plugin_utils/probes/<name>/params.json."""
    return os.path.join(root or collection_root(), "plugins", "plugin_utils", "probes", name, PARAMS_SPEC)


def _spec_member(directory: str, name: str) -> tuple[str, str]:
    path = params_spec_path(name, os.path.dirname(directory))
    if not os.path.isfile(path) or os.path.islink(path):
        raise FileNotFoundError("the probe %s has no parameter spec: %s must be a file (docs/adding-a-probe.md)" % (name, path))
    return "%s/%s/%s" % (PROBE_PACKAGES, name, PARAMS_SPEC), path


def _data_members(directory: str, name: str) -> list[tuple[str, str]]:
    """The regular files of probe_packages/<name>/data/, sorted (not its subfolders); a link there is refused."""
    data = os.path.join(directory, PROBE_PACKAGES, name, PROBE_DATA)
    if not os.path.isdir(data):
        return []
    members = []
    for file_name in sorted(os.listdir(data)):
        path = os.path.join(data, file_name)
        if os.path.islink(path):
            raise ValueError("%s is a link: a probe's data files are packed as they are, never through a link" % path)
        if os.path.isfile(path):
            members.append(("%s/%s/%s/%s" % (PROBE_PACKAGES, name, PROBE_DATA, file_name), path))
    return members


def build_probe_archive(name: str, root: str | None = None) -> tuple[bytes, str]:
    """Return the zip's bytes and their sha256 (hex)."""
    members = _archive_members(probes_dir(root), check_probe_name(name))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for arcname, path in members:
            info = zipfile.ZipInfo(arcname, date_time=_FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with open(path, "rb") as handle:
                bundle.writestr(info, handle.read())
    payload = buffer.getvalue()
    return payload, hashlib.sha256(payload).hexdigest()


def cached_probe_archive(name: str, cache_dir: str, root: str | None = None) -> tuple[bytes, str]:
    """build_probe_archive, kept in ``cache_dir`` (the controller's per-run temporary directory) under a key of the
    members' names, sizes and modification times, so the hosts of a run pack each probe once, not once each."""
    members = _archive_members(probes_dir(root), check_probe_name(name))
    signature = hashlib.sha256()
    for arcname, path in members:
        info = os.stat(path)
        signature.update(("%s\0%d\0%d\0" % (arcname, info.st_size, info.st_mtime_ns)).encode())
    path = os.path.join(cache_dir, "gpufleet-probe-%s-%s.zip" % (name, signature.hexdigest()[:32]))
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        payload, digest = build_probe_archive(name, root)
        os.makedirs(cache_dir, exist_ok=True)
        write_bytes_atomically(path, payload, mode=0o600)
        return payload, digest
    with os.fdopen(descriptor, "rb") as handle:
        payload = handle.read()
    return payload, hashlib.sha256(payload).hexdigest()
