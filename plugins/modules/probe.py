#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: probe
short_description: Run one measurement probe on a host and bring back its schema-validated result
version_added: "0.1.0"
description:
  - Runs one probe script of this collection (for example C(health)) on the target host and returns its result
    envelope (JSON with C(status), C(reason) and probe-specific C(data)).
  - The action plugin finds the probe script inside the collection and packs it with its shared library. It passes
    the pack to this module, which starts the probe as a detached job on the host and returns at once; the action
    plugin then waits for the job with M(gpufleet.validation.probe_wait), one blocking module run at a time, so a
    probe that ends within the first wait costs two round trips. No temporary directory or file transfer is needed.
  - The module runs the probe as an argument list (never through a shell) under O(python), in its own process group,
    and kills the whole group when O(timeout) passes. Parameters reach the probe as a JSON file and the result comes
    back through a JSON file that the probe writes, so text that libraries print cannot corrupt it.
  - On Linux the module is a child subreaper while the probe runs, so whatever the probe leaves running, also a
    daemon that left its process group, is killed when it ends and named in the envelope's C(notes).
  - A result file that is not UTF-8, holds a lone surrogate or a control character, or is larger than 8 MiB makes
    the envelope C(error) with a reason that says where; what the probe wrote is returned in RV(raw_output).
  - Python writes the bytecode the probe compiles into a private cache of the user
    (C(~/.cache/gpufleet/bytecode), through C(PYTHONPYCACHEPREFIX)), never beside a source; where that directory is
    not private to the user, nothing is written (docs/security.md).
  - Values of environment variables whose names look secret (C(TOKEN), C(SECRET), C(PASSWORD), C(KEY), C(AUTH),
    ...) are redacted from the envelope and RV(raw_output) before they leave the host (docs/security.md).
  - Back on the controller the envelope and its data are validated against the probe's JSON Schema and written
    atomically to C(<results_dir>/<run_id>/<host>/<probe>.json).
  - A probe that hangs, crashes, prints garbage, breaks its schema, or whose interpreter or framework is missing
    yields an envelope with a status (C(timeout), C(error), C(unavailable)) and a reason; the task does not fail,
    so the play goes on for the other probes and hosts. An unreachable host is recorded with status C(unreachable).
  - While the probe runs the action plugin prints a line every O(progress_interval) seconds; each wait on the host
    lasts until the probe ends or the next line is due.
author:
  - gpufleet.validation contributors (@gpufleet)
options:
  name:
    description:
      - Name of the probe, the file C(probes/<name>.py) of this collection.
    type: str
    required: true
  python:
    description:
      - Interpreter on the target host that runs the probe, for example the Python that has torch.
      - When unset, the host's first probe of the playbook run looks for one (as M(gpufleet.validation.find_python)
        does, the candidates of C(gpufleet_python_candidates) first, and an earlier run's proof reused while nothing it depends on
        changed), which is the interpreter with torch built for CUDA and nvidia-ml-py, else the one with the most of them, else
        the interpreter Ansible uses; the host's later probes use the same, and the choice is stored in the host's
        C(inputs.json) and shown in its dossier (docs/python-discovery.md).
    type: str
  timeout:
    description:
      - Seconds the probe may run before its whole process group is killed (SIGTERM, then SIGKILL after 5 s).
      - Defaults to the time limit the probe declares (C(plugins/plugin_utils/probes/<name>.py); 300 for a probe
        without a declaration).
    type: int
  profile:
    description:
      - The validation profile the probe runs in; the parameters that profile gives the probe are merged under
        O(params), which win.
    type: str
  params:
    description:
      - Parameters of the probe, passed to it as a JSON file. Unknown keys are refused by the probe.
    type: dict
    default: {}
  results_dir:
    description:
      - Directory on the controller under which results are stored. Used by the action plugin.
      - Relative paths are relative to the current working directory of C(ansible-playbook).
    type: path
    default: results
  run_id:
    description:
      - Identifier of this validation run, shared by all hosts; letters, digits, C(.), C(_) and C(-).
      - Used by the action plugin to name the run's directory.
    type: str
    required: true
  progress_interval:
    description:
      - Seconds between the progress lines that the action plugin prints while the probe runs.
    type: int
    default: 15
  archive_data:
    description:
      - The packed probe (a zip, base64). Set by the action plugin; do not set it yourself.
    type: str
  job_dir:
    description:
      - Directory on the target for the probe's detached job (its pid, its result, its work directory), created with
        mode 0700. Set by the action plugin from the shell's C(async_dir); do not set it yourself.
    type: path
  first_wait:
    description:
      - Seconds the module blocks after starting the job, waiting for it to end as M(gpufleet.validation.probe_wait)
        does, so that a probe which ends by then comes back in one round trip. Set by the action plugin (the time of
        its first progress line); do not set it yourself.
    type: float
  discover:
    description:
      - Python discovery to run before the job starts, as M(gpufleet.validation.find_python) runs it (C(candidates),
        C(timeout), C(proven)); the probe then runs with the Python it chose, and the answer carries the choice. Set by
        the action plugin for the first probe of a host when O(python) is not set; do not set it yourself.
    type: dict
  nonce:
    description:
      - The controller's value for this start of the probe, given to the probe as the environment variable
        C(GPUFLEET_PROBE_NONCE); a result that does not write it back, or that says it started before this start, is
        stored as an error saying what it claimed (a result copied or replayed from another host or run). Set by the
        action plugin; do not set it yourself.
    type: str
notes:
  - Check mode runs nothing and says so.
  - The result is stored even when the probe fails, so a run never silently loses a host or a probe.
attributes:
  check_mode:
    support: full
    description: Runs nothing in check mode and reports C(changed=false).
  diff_mode:
    support: none
    description: Produces no diff.
  action:
    support: full
    description: Has an action plugin of the same name that does the transfer, validation and storage.
  async:
    support: none
    description: The probe runs as a detached job on the host already; do not set C(async) on the task.
"""

EXAMPLES = r"""
- name: Read the health of every GPU with the host's torch Python
  gpufleet.validation.probe:
    name: health
    python: /opt/torch/.venv/bin/python3
    timeout: 300
    run_id: "{{ gpufleet_run_id }}"
    results_dir: "{{ playbook_dir }}/results"

- name: Run a probe with parameters
  gpufleet.validation.probe:
    name: health
    params:
      cuda_init: false
    run_id: manual-1
  register: health

- name: Show why the probe was not ok
  ansible.builtin.debug:
    msg: "{{ health.envelope.reason }}"
  when: health.envelope.status != 'ok'
"""

RETURN = r"""
envelope:
  description: The probe's result envelope, as validated and stored.
  returned: always
  type: dict
  contains:
    status:
      description: One of C(ok), C(partial), C(unavailable), C(error), C(timeout), C(unreachable).
      type: str
      sample: ok
    reason:
      description: Why the status is not C(ok), in words a person can act on; empty when it is.
      type: str
      sample: "the probe was killed by SIGSEGV (signal 11) before it finished"
    data:
      description: Probe-specific results, per the probe's JSON Schema.
      type: dict
    command:
      description: The argument list that ran the probe.
      type: list
      elements: str
result_path:
  description: Where the envelope was written on the controller.
  returned: unless in check mode
  type: str
  sample: /srv/validation/results/20261130T020000Z-1234/node-01/health.json
status:
  description: Copy of RV(envelope.status), for C(when) conditions.
  returned: always
  type: str
  sample: ok
raw_output:
  description:
    - What the probe wrote when it could not be trusted (not UTF-8, not JSON, not an envelope, too large), or what it
      printed on stdout (its last 64 KiB) when it wrote no result file; also stored beside the result.
    - At most 1 MiB of a result file (its first and last 512 KiB around a line that gives the file's size when it is
      larger); a byte that is not UTF-8 shows as C(\\xNN); secret-looking environment values are redacted.
  returned: when the output could not be parsed, or no result file was written and the probe printed something on stdout
  type: str
"""

import base64
import binascii
import json
import os
import sys
import uuid
import zipfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_envelope import (
    NONCE_VARIABLE,
    RAW_OUTPUT_LIMIT_BYTES,
    RESULT_FILE_LIMIT_BYTES,
    interpret,
    utc_now_iso,
)
from ansible_collections.gpufleet.validation.plugins.module_utils.bytecode_cache import forget_bytecode_of, probe_environment
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_job import start_detached, wait_answer
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_output_text import carryable
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_spec import PROBE_ARGUMENT_SPEC
from ansible_collections.gpufleet.validation.plugins.module_utils.python_search import find
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_process import (
    file_size,
    read_bounded,
    read_tail,
    run_probe_process,
)
from ansible_collections.gpufleet.validation.plugins.module_utils.secret_redaction import SecretRedactor


STDOUT_KEPT_BYTES = 64 * 1024
MAX_FIRST_WAIT_S = 60


def extract_archive(archive, destination):
    """Unpack the probe archive; refuse members that would land outside ``destination``."""
    root = os.path.realpath(destination)
    with zipfile.ZipFile(archive) as bundle:
        for member in bundle.namelist():
            target = os.path.realpath(os.path.join(root, member))
            if not target.startswith(root + os.sep):
                raise ValueError("archive member %r would be written outside the work directory" % member)
        bundle.extractall(root)


def run_module(module):
    name = module.params["name"]
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, msg="check mode: probe %s was not run" % name)
    if not module.params["archive_data"] or not module.params["job_dir"]:
        module.fail_json(msg="archive_data and job_dir are set by the gpufleet.validation.probe action plugin; run "
                             "the module through it")
    try:
        archive = base64.b64decode(module.params["archive_data"], validate=True)
    except (binascii.Error, ValueError) as exc:
        module.fail_json(msg="archive_data is not base64: %s" % exc)
    job_id = uuid.uuid4().hex
    job_dir = module.params["job_dir"]  # type path: already expanded
    params = dict(module.params)
    found = discovered(module.params["discover"])
    if "choice" in found:
        params["python"] = found["choice"]["python"]
    try:
        start_detached(job_dir, job_id, lambda work_dir: run_probe_job(params, archive, work_dir))
    except (OSError, ValueError, RuntimeError) as exc:
        module.fail_json(msg="the probe %s could not be started in %s: %s" % (name, job_dir, exc), **found)
    started = dict(found, changed=False, started=True, job_id=job_id, job_dir=job_dir)
    wait_s = min(max(module.params["first_wait"] or 0.0, 0.0), MAX_FIRST_WAIT_S)
    if wait_s <= 0:
        module.exit_json(finished=False, **started)
    answer = wait_answer(job_dir, job_id, wait_s, keep_taken=False)
    if answer.pop("failed", False):
        module.fail_json(**dict(started, **answer))
    module.exit_json(**dict(started, **answer))


def discovered(discover):
    """{} without discovery; {"choice": ...} with the Python found; {"discovery_failure": why} when the search itself
    failed, and the probe then runs under this module's interpreter, as it would after a failed find_python."""
    if not discover:
        return {}
    try:
        return {"choice": find(discover.get("candidates") or [], int(discover.get("timeout") or 60), discover.get("proven"))}
    except Exception as exc:  # pylint: disable=broad-exception-caught
        return {"discovery_failure": "Python discovery failed on the host: %s: %s" % (type(exc).__name__, exc)}


def run_probe_job(params, archive, workdir):
    """The detached job: unpack the probe, run it under its limit, interpret what it left; the module's result."""
    name = params["name"]
    python = params["python"] or sys.executable
    started = utc_now_iso()
    archive_path = os.path.join(workdir, "probe.zip")
    with open(archive_path, "wb") as handle:
        handle.write(archive)
    extract_archive(archive_path, workdir)
    params_path = os.path.join(workdir, "params.json")
    out_path = os.path.join(workdir, "result.json")
    with open(params_path, "w") as handle:
        json.dump(params["params"], handle)
    argv = [python, os.path.join(workdir, name + ".py"), "--params", params_path, "--out", out_path]
    env, unused_why_no_cache = probe_environment(os.environ)
    if params.get("nonce"):
        env[NONCE_VARIABLE] = params["nonce"]
    try:
        outcome = run_probe_process(argv, params["timeout"], os.path.join(workdir, "stdout.log"),
                                    os.path.join(workdir, "stderr.log"), cwd=workdir, env=env)
    finally:
        forget_bytecode_of(env, workdir)
    stdout_path = os.path.join(workdir, "stdout.log")
    output = read_bounded(out_path, RESULT_FILE_LIMIT_BYTES, RAW_OUTPUT_LIMIT_BYTES)
    envelope, raw = interpret(name, "", outcome, output, read_tail(os.path.join(workdir, "stderr.log")),
                              started, python, read_tail(stdout_path, STDOUT_KEPT_BYTES), file_size(stdout_path),
                              nonce=params.get("nonce"))
    return module_result(envelope, raw, SecretRedactor(env))


def module_result(envelope, raw, redactor):
    """What the module returns: secrets redacted, and every string one that Ansible's module JSON accepts."""
    envelope = redactor.deep(envelope)
    raw = redactor.text(raw)
    if redactor.redacted:
        envelope["notes"] = list(envelope.get("notes", [])) + [
            "the values of secret-looking environment variables were redacted from what the probe wrote: %s"
            % ", ".join("$" + name for name in sorted(redactor.redacted))]
    if redactor.tokens_redacted:
        envelope["notes"] = list(envelope.get("notes", [])) + [
            "credential-shaped values (a token prefix such as ghp_ or hf_) were redacted from what the probe wrote"]
    result = dict(changed=False, envelope=envelope, status=envelope["status"])
    if raw is not None:
        result["raw_output"] = raw
    return carryable(result)


def main():
    module = AnsibleModule(argument_spec=PROBE_ARGUMENT_SPEC, supports_check_mode=True)
    run_module(module)


if __name__ == "__main__":
    main()
