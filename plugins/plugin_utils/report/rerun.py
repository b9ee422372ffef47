"""The dossier's command to run a probe again by hand, from what its envelope recorded. Pure: stdlib only; nothing runs it.

The envelope's ``command`` is the argv as run: the host's Python, then the probe in a temporary copy on the host (the
action plugin transfers it for each run and deletes it after) and the --params file beside it, both gone. What a person
can paste instead: copy the collection's probes/ folder and the probe's parameter spec (beside the script, as
<probe>.params.json: probes/probelib/params.py looks there) to the host, and run the probe from there under the same
Python with the recorded parameters inline (``--params-json``, probes/probelib/runner.py). Every word is quoted for a
POSIX shell (shlex.quote).
"""
from __future__ import annotations

import json
import re
import shlex
from typing import Any, Mapping

PROBE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")  # schemas/envelope.schema.json's probe
# A host name shown as it is: a DNS name, an IPv4 or IPv6 address. Any other (a name with a space, a quote, "<") stands
# as HOST, so that no shell, Markdown or HTML reader meets it in a command.
PLAIN_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$")
PROBES_COPY = "gpufleet-probes"  # where the commands put the probes/ folder, in the login directory on the host
# Where ansible-galaxy installs the collection by default; the line says what to change it to otherwise.
COLLECTION_LINE = ("COLLECTION=~/.ansible/collections/ansible_collections/gpufleet/validation  # on the controller: where "
                   "gpufleet.validation is installed (ansible-galaxy collection list gpufleet.validation), or the clone")


def _python(command: Any) -> str:
    if isinstance(command, list) and command and isinstance(command[0], str) and command[0]:
        return command[0]
    return "python3"


def rerun_command(envelope: Mapping[str, Any], host: str) -> str:
    """Lines a person pastes into a POSIX shell: copy the collection's probes to the host, then run the probe there with
    the Python and parameters it ran with. Without recorded parameters (results stored before they were), the
    probe's defaults, and a comment that says so."""
    probe = envelope.get("probe")
    probe = probe if isinstance(probe, str) and PROBE_NAME.match(probe) else "PROBE"
    script = '"$HOME/%s/%s.py"' % (PROBES_COPY, probe)  # a probe name and PROBES_COPY need no quoting: $HOME expands
    run = [shlex.quote(_python(envelope.get("command"))), script]
    lines = [COLLECTION_LINE]
    if not PLAIN_HOST.match(host):
        lines.append("# HOST: this host as ssh reaches it (its inventory name holds characters kept off a command line)")
        host = "HOST"
    target = "[%s]" % host if ":" in host else host
    spec = '"$COLLECTION/plugins/plugin_utils/probes/%s/params.json"' % probe  # the probe's parameter spec, beside it
    lines += ['scp -r "$COLLECTION/probes" %s  # a local host: cp -r "$COLLECTION/probes" "$HOME/%s"'
              % (shlex.quote("%s:%s" % (target, PROBES_COPY)), PROBES_COPY),
              'scp %s %s  # a local host: cp %s "$HOME/%s/%s.params.json"'
              % (spec, shlex.quote("%s:%s/%s.params.json" % (target, PROBES_COPY, probe)), spec, PROBES_COPY, probe),
              "# then on %s:" % host]
    params = envelope.get("params")
    if isinstance(params, Mapping):
        run += ["--params-json", shlex.quote(json.dumps(params, sort_keys=True))]  # ASCII JSON: nothing raw to mangle
    else:
        lines.append("# (the parameters it ran with were not recorded: this runs the probe's defaults)")
    lines.append(" ".join(run))
    return "\n".join(lines)
