# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find the probe, start it as a job on the host, wait for it with progress lines, validate, store."""
from __future__ import annotations

import base64
import errno
import os
import secrets
import time
from contextlib import ExitStack, contextmanager

from ansible import constants as C
from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpufleet.validation.plugins.module_utils.probe_envelope import failure_envelope, utc_now_iso
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_spec import (
    PROBE_ARGUMENT_SPEC, PROBE_STORE_ARGUMENT_SPEC, PROBE_TIMEOUT_LIMIT_S)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.collection_info import collection_version
from ansible_collections.gpufleet.validation.plugins.plugin_utils.control_chars import LINE_BREAKS, LINE_JOINER, terminal_text
from ansible_collections.gpufleet.validation.plugins.plugin_utils.controller_clock import controller_times
from ansible_collections.gpufleet.validation.plugins.plugin_utils.host_deadlines import (
    START_CALL_S,
    STAGE_START,
    STAGE_WAIT,
    WAIT_CALL_MARGIN_S,
    HostStalled,
    UnansweredWaits,
    connection_notices_a_silent_peer,
    host_call_deadline,
    ssh_keepalive_args,
)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_archive import cached_probe_archive
from ansible_collections.gpufleet.validation.plugins.plugin_utils.python_found import PythonFound
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import (
    JOB_RUNNING, declaration, profile_params, with_derived_params)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import (
    check_probe_name,
    host_dir,
    probe_result_path,
    result_file_name,
)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.previous import previous_python_proof
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.results import store_result_at
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.safe_fs import entry_kind
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.run_dir import (
    INPUTS_FILE,
    StoreRefused,
    claimed_host_dir,
    finished_earlier,
    host_inputs,
    inputs_at,
    open_run,
    playbook_writer,
    write_host_inputs,
)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import SchemaToolMissing, load_schema

display = Display()

MODULE = "gpufleet.validation.probe"
WAIT_MODULE = "gpufleet.validation.probe_wait"
FIND_PYTHON_TIMEOUT_S = 60
JOB_MARGIN_S = 120  # past the probe's own limit (which its job enforces on the host) the action stops waiting
DEFAULT_TIMEOUT_S = 300
FIRST_PROGRESS_AFTER_S = 5
# When each host last answered a module run of this worker (a task's loop runs every probe of a host in one worker).
_LAST_ANSWER = {}


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = False
    _job_started = None  # monotonic time the probe's job started on the host, None until then
    _starting = False  # True while the module that starts the job runs
    _unanswered = None  # UnansweredWaits of the probe being waited for, set when its job starts (_run_on_host)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        validation, args = self.validate_argument_spec(argument_spec=dict(PROBE_ARGUMENT_SPEC, **PROBE_STORE_ARGUMENT_SPEC))
        store_args = {key: args.pop(key) for key in PROBE_STORE_ARGUMENT_SPEC}
        host = task_vars["inventory_hostname"]

        try:
            name = check_probe_name(args["name"])
            if args["archive_data"] or args["job_dir"] or args["first_wait"] is not None or args["discover"] or args["nonce"]:
                raise ValueError("archive_data, job_dir, first_wait, discover and nonce are set by the action plugin itself; "
                                 "remove them from the task")
            declared = declaration(name)
            if args["timeout"] is None:
                args["timeout"] = declared.timeout_s if declared is not None else DEFAULT_TIMEOUT_S
            if args["timeout"] < 1:
                raise ValueError("timeout must be at least 1 second, not %d" % args["timeout"])
            if args["timeout"] > PROBE_TIMEOUT_LIMIT_S:
                raise ValueError("timeout is %d seconds, more than the %d (a day) a probe may be given"
                                 % (args["timeout"], PROBE_TIMEOUT_LIMIT_S))
            result_path = probe_result_path(args["results_dir"], args["run_id"], host, name)
            archive, archive_sha256 = cached_probe_archive(name, C.DEFAULT_LOCAL_TMP)
            params = dict(profile_params(args["profile"], name), **(args["params"] or {}))
            if store_args["beside_a_job"]:
                if declared is None or declared.disturbs_job:
                    message = "probe %s was not run on %s: %s" % (name, host, JOB_RUNNING)
                    display.display("  " + terminal_text(message))
                    result.update(changed=False, skipped=True, skip_reason="beside_a_job", status="skipped", msg=message)
                    return result
                params.update(declared.quiet_params)
            args["params"], input_notes = with_derived_params(name, os.path.dirname(result_path), params, _shipped_baselines)
            load_schema("envelope.schema.json")
            load_schema(name + ".schema.json")
        except (ValueError, OSError) as exc:
            result.update(failed=True, msg="gpufleet.validation.probe: %s" % exc)
            return result

        if self._task.check_mode:
            message = "check mode: probe %s was not run on %s and nothing was written" % (name, host)
            display.display("  " + terminal_text(message))
            result.update(changed=False, skipped=True, status="skipped", msg=message)
            return result
        with ExitStack() as held:
            try:
                host_fd, inputs, choice = held.enter_context(self._claim_host_dir(host, args, store_args, task_vars))
            except StoreRefused as exc:
                result.update(failed=True, msg="probe %s was not run on %s: %s" % (name, host, exc))
                return result
            except OSError as exc:
                result.update(failed=True, msg="probe %s was not run on %s: its result could not be stored in %s (%s); "
                                               "set gpufleet_results_dir to a directory this user can write"
                                               % (name, host, os.path.dirname(result_path), exc))
                return result
            kept = finished_earlier(host_fd, name, playbook_writer(True), result_path) if store_args["resume"] else None
            if kept is not None:
                # A resume never replaces a finished result of an earlier playbook run (docs/store.md).
                message = ("%s: probe %s kept: its result (%s) is from an earlier playbook run of run %s, so it is not "
                           "probed again" % (host, name, kept, args["run_id"]))
                display.display("  " + terminal_text(message))
                result.update(changed=False, skipped=True, skip_reason="kept", status=kept, result_path=result_path,
                              msg=message)
                return result
            python_found = PythonFound(choice, inputs, store_args["python_candidates"])
            return self._run_and_store(result, name, host, args, archive, archive_sha256, input_notes, task_vars,
                                       host_fd, os.path.dirname(result_path), python_found)

    @contextmanager
    def _claim_host_dir(self, host, args, store_args, task_vars):
        """Join (or open) the run as this playbook run, claim the host's directory, record the host's judge inputs.
        Yields the directory, the inputs as recorded now (None where a task gives none and the stored ones stay) and
        the Python this playbook run chose for the host earlier (None when it has not)."""
        inputs = dict(store_args["host_inputs"] or {})
        writer = playbook_writer(store_args["resume"], inputs.get("profile"), task_vars.get("ansible_limit"))
        open_run(args["results_dir"], args["run_id"], writer)
        with claimed_host_dir(args["results_dir"], args["run_id"], host, writer) as host_fd:
            shown = os.path.join(host_dir(args["results_dir"], args["run_id"], host), INPUTS_FILE)
            stored = inputs_at(host_fd, shown) or {}
            # The Python found for this host by this playbook run's first probe serves its other probes.
            choice = stored.get("python_choice") if (
                args.get("python") is None and stored.get("writer_id") == writer["writer_id"]) else None
            record = None
            # A task that gives no inputs (playbooks/collective_hosts.yml's probe) keeps what the profile's run stored.
            if inputs or entry_kind(host_fd, INPUTS_FILE) == "missing":
                record = host_inputs(host, args["run_id"], writer, inputs.get("profile"), inputs.get("rule_overrides"),
                                     inputs.get("groups") or [], args.get("python") or (choice or {}).get("python"),
                                     choice, inputs.get("not_run"), inputs.get("probes"))
                write_host_inputs(host_fd, record, shown)
            yield host_fd, record, choice

    def _run_and_store(self, result, name, host, args, archive, archive_sha256, input_notes, task_vars, host_fd,
                       shown_dir, python_found):
        result_path = os.path.join(shown_dir, result_file_name(name))
        unreachable = False
        raw_output = None
        self._job_started = None
        try:
            discover = None
            if args["python"] is None and python_found.choice is not None:
                args["python"] = python_found.choice["python"]
            elif args["python"] is None:
                discover = self._discovery(python_found, args, task_vars)
            envelope, raw_output = self._run_on_host(name, host, args, archive, task_vars, discover,
                                                     lambda job: self._record_choice(python_found, job, host_fd, shown_dir))
        except HostStalled as exc:
            unreachable = True
            what = ("the host stopped answering: %s%s" % (exc, "" if self._job_started is None else
                                                          ", %.0f s after the probe started (its job on the host ends at "
                                                          "its own limit)" % (time.monotonic() - self._job_started)))
            envelope = failure_envelope(
                name, host, "unreachable",
                "%s; stage: %s; check that it is up and that SSH works (ansible -m ansible.builtin.ping %s)"
                % (what, exc.stage, host))
        except AnsibleConnectionFailure as exc:
            unreachable = True
            last_answer = _LAST_ANSWER.get(host)
            if self._job_started is None and self._starting and last_answer is not None:
                # The start's answer was lost: the job may have started on the host just before the connection broke.
                what = ("the connection to the host was lost while the probe was being started or waited for in its "
                        "first %d s (one call does both), %.0f s after the host's last answer; the probe may have started, "
                        "and its result is lost" % (FIRST_PROGRESS_AFTER_S, time.monotonic() - last_answer))
            elif self._job_started is None:
                what = "the host could not be reached, so the probe did not run"
            else:
                what = ("the connection to the host was lost %.0f s after the probe started, so its result is lost"
                        % (time.monotonic() - self._job_started))
            envelope = failure_envelope(
                name, host, "unreachable",
                "%s: %s; stage: %s; check that it is up and that SSH works (ansible -m ansible.builtin.ping %s)"
                % (what, str(exc).strip() or type(exc).__name__, STAGE_START if self._job_started is None else STAGE_WAIT,
                   host))
        except AnsibleError as exc:
            # Raised before the probe's job started, e.g. by a connection plugin whose library the controller lacks;
            # recorded so that the play goes on to the report instead of aborting when every host fails so.
            if self._job_started is not None:
                raise
            unreachable = _paramiko_missing(self._connection)
            envelope = failure_envelope(name, host, "unreachable" if unreachable else "error",
                                        _start_failure(exc, unreachable))
        python_found.explain(envelope)

        envelope.update(run_id=args["run_id"], collection_version=collection_version(), probe_sha256=archive_sha256,
                        params=args["params"])  # command's --params file is gone after the run: what it held
        if input_notes:
            envelope["notes"] = list(envelope.get("notes", [])) + ["parameters derived on the controller: %s" % "; ".join(input_notes)]
        try:
            envelope = store_result_at(host_fd, name, envelope, raw_output, shown_dir)
        except SchemaToolMissing as exc:
            result.update(failed=True, msg=str(exc))
            return result
        except OSError as exc:
            result.update(failed=True, envelope=envelope, status=envelope["status"],
                          msg="write failed: %s %s: the result of probe %s for %s could not be written to %s (the "
                              "report says so); make room in the results directory or make it writable "
                              "(gpufleet_results_dir)" % (errno.errorcode.get(exc.errno, "errno %s" % exc.errno),
                                                          exc.strerror or exc, name, host, result_path))
            return result

        result.update(changed=False, envelope=envelope, status=envelope["status"], result_path=result_path)
        if unreachable:
            # Skipped, not Ansible's "unreachable": that would print the whole result twice (item and loop) as JSON.
            # This one line says it; the host's last play fails it (playbooks/validate.yml, docs/reports.md).
            result.update(skipped=True, skip_reason="not reached", msg=envelope["reason"],
                          warnings=[terminal_text("%s: not reached (probe %s): %s" % (host, name, envelope["reason"]))])
        elif envelope["status"] != "ok":
            result["warnings"] = [terminal_text("probe %s on %s: %s: %s" % (name, host, envelope["status"], envelope["reason"]))]
        return result

    def _discovery(self, python_found, args, task_vars):
        """What the start of the host's first probe is asked to find the Python with: the candidates, and the previous
        run's proof that torch imports there (reused while nothing it depends on changed, docs/python-discovery.md)."""
        return {"candidates": python_found.candidates, "timeout": FIND_PYTHON_TIMEOUT_S,
                "proven": previous_python_proof(args["results_dir"], args["run_id"], task_vars["inventory_hostname"])}

    def _record_choice(self, python_found, job, host_fd, shown_dir):
        """The Python the start found, kept for the host's next probes and in its inputs.json."""
        python_found.found(job.get("choice"), job.get("discovery_failure") or _module_failure_text(job))
        if python_found.inputs is not None:
            record = dict(python_found.inputs, python_choice=python_found.choice,
                          python=python_found.choice["python"] or python_found.inputs["python"])
            write_host_inputs(host_fd, record, os.path.join(shown_dir, INPUTS_FILE))

    def _run_on_host(self, name, host, args, archive, task_vars, discover, record_choice):
        """One module run finds the host's Python (discover, on its first probe), starts the job and waits for its
        first seconds: a short probe is one round trip. Then waits as long as the job runs."""
        started = utc_now_iso()
        # only this start of this probe on this host knows it: the result must carry it back (probe_envelope.interpret)
        nonce = secrets.token_hex(16)
        module_args = dict(args, archive_data=base64.b64encode(archive).decode("ascii"),
                           job_dir=self._connection._shell.get_option("async_dir"), first_wait=FIRST_PROGRESS_AFTER_S,
                           discover=discover, nonce=nonce)
        ssh_keepalive_args(self._connection)
        self._starting = True
        asked, asked_wall = time.monotonic(), time.time()
        start_s = START_CALL_S + FIRST_PROGRESS_AFTER_S + (FIND_PYTHON_TIMEOUT_S if discover is not None else 0)
        with host_call_deadline(start_s, STAGE_START):
            job = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars, wrap_async=False)
            self._starting = False
            answered = _LAST_ANSWER[host] = time.monotonic()
            self._remove_tmp_path(self._connection._shell.tmpdir)
        if discover is not None:
            record_choice(job)
        if "job_id" not in job:
            return failure_envelope(name, host, "error", "the probe module could not be started on the host: %s"
                                    % _module_failure_text(job), started=started), None
        # The job started after the search: its time limit and progress lines count from there.
        self._job_started = asked + float((job.get("choice") or {}).get("duration_s") or 0.0)
        self._unanswered = UnansweredWaits()
        finished = self._wait_for_job(name, host, job, args, task_vars)
        if finished is None:
            return failure_envelope(
                name, host, "timeout",
                "the probe module did not report back within %d s although the probe's own limit is %d s; "
                "the host may be overloaded%s" % (args["timeout"] + JOB_MARGIN_S, args["timeout"],
                                                  "; " + self._unanswered.sentence() if self._unanswered.calls else ""),
                started=started, duration_s=args["timeout"] + JOB_MARGIN_S), None
        if "envelope" not in finished:
            return failure_envelope(name, host, "error", "the probe module failed on the host: %s"
                                    % _module_failure_text(finished), started=started), None
        envelope = finished["envelope"]
        if envelope.get("nonce") != nonce:
            return failure_envelope(name, host, "error", "the host's answer does not carry this start's nonce: it is not "
                                    "the result of this start of probe %s (a copied or replayed answer)" % name,
                                    started=started), None
        envelope["host"] = host
        # the controller's clock: when the job started (after the Python search) and when its result came back
        on_controller = asked_wall - asked
        envelope["controller"] = controller_times(on_controller + self._job_started, on_controller + answered, time.time(),
                                                  envelope.get("started"))
        if self._unanswered.calls:
            envelope["notes"] = list(envelope.get("notes") or []) + [self._unanswered.sentence() + ", and then answered"]
        return envelope, finished.get("raw_output")

    def _wait_for_job(self, name, host, started, args, task_vars):
        """Wait for the job on the host from the start's answer (which waited for its first seconds): one blocking
        module run until it ends or the next progress line is due, so the person sees it is alive. The job's result, a
        failure to wait, or None past the probe's limit."""
        begun = self._job_started
        deadline = begun + args["timeout"] + JOB_MARGIN_S
        next_progress = begun + FIRST_PROGRESS_AFTER_S
        status = started
        while True:
            if status.get("failed") or "finished" not in status:
                return status
            if status["finished"]:
                return status.get("result") or {}
            now = time.monotonic()
            if now >= next_progress:
                display.display(terminal_text("  %s: probe %s still running after %.0f s (limit %d s)"
                                              % (host, name, now - begun, args["timeout"])))
                next_progress = now + max(1, args["progress_interval"])
            if now >= deadline:
                return None
            wait_s = max(0.0, min(next_progress, deadline) - now)
            try:
                with host_call_deadline(wait_s + WAIT_CALL_MARGIN_S, STAGE_WAIT):
                    status = self._execute_module(module_name=WAIT_MODULE, task_vars=task_vars, wrap_async=False,
                                                  module_args={"job_id": started["job_id"], "job_dir": started["job_dir"],
                                                               "wait": round(wait_s, 3)})
                    _LAST_ANSWER[host] = time.monotonic()
                    self._remove_tmp_path(self._connection._shell.tmpdir)
            except HostStalled:
                # A host gone ends such a connection by itself within the margin: past the deadline it lived (slow, not
                # gone), so the job, which runs on by itself, is asked again until its own limit has passed.
                if not connection_notices_a_silent_peer(self._connection):
                    raise
                self._unanswered.add(now - begun, wait_s + WAIT_CALL_MARGIN_S)
                status = {"finished": False}


def _shipped_baselines():
    """The SKUs' baselines, handed to a probe's derived parameters (e.g. gemm's datasheet peaks). Imported only here: the
    loader brings the judge's rules with it, which the per-host work otherwise never loads."""
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_baselines
    return load_baselines()[0]


def _paramiko_missing(connection):
    if getattr(connection, "transport", None) != "paramiko":
        return False
    # Imported only here: paramiko costs every worker that loads this action a third of a second.
    from ansible.module_utils.compat.paramiko import _paramiko as paramiko_library
    return paramiko_library is None


def _start_failure(exc, paramiko_missing):
    text = str(exc).strip() or type(exc).__name__
    if paramiko_missing:
        return ("paramiko is not installed on the controller, so the host could not be reached with "
                "ansible_connection=paramiko and the probe did not run (%s); install it (.venv/bin/python -m pip "
                "install -r requirements-paramiko.txt) or use the ssh connection (docs/connections.md)" % text)
    return "the probe could not be started on the host: %s" % text


def _module_failure_text(result):
    parts = [str(result.get("msg") or "").strip()]
    for key in ("module_stderr", "module_stdout", "stderr"):
        text = str(result.get(key) or "").strip()
        if text:
            # A reason is one line of text wherever it is shown: the output's lines joined with " / ".
            parts.append("%s: %s" % (key, LINE_JOINER.join(line.strip() for line in LINE_BREAKS.split(text[-800:]) if line.strip())))
    return "; ".join(part for part in parts if part) or "no message"
