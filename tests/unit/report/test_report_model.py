from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import NO_RESULT_REASON, load_run


def test_states_and_reasons_per_host(fleet):
    run = load_run(str(fleet.run_dir), fleet.expected, fleet.groups)
    hosts = {host.name: host for host in run.hosts}
    assert set(hosts) == set(fleet.expected)
    assert hosts["gpu-a01"].state == "ok"
    assert hosts["cpu-b01"].state == "unavailable"
    assert hosts["gpu-c01"].state == "error"
    assert hosts["gpu-d01"].state == "error"
    assert hosts["gpu-d01"].probes["health"].reason.startswith("result file unreadable: ")
    assert hosts["gpu-d01"].probes["health"].raw_file == "health.raw"
    assert hosts["gpu-e01"].state == "unreachable" and hosts["gpu-e01"].reasons == [NO_RESULT_REASON]
    assert hosts[fleet.evil_host].state == "partial"
    assert [host.state for host in run.hosts_worst_first()] == \
        ["unreachable", "error", "error", "partial", "unavailable", "ok"]


def test_unavailable_fields_are_counted_per_probe(fleet):
    run = load_run(str(fleet.run_dir), fleet.expected, fleet.groups)
    health = {host.name: host for host in run.hosts}["gpu-a01"].probes["health"]
    assert ("gpus[0].mig_mode", "MIG mode could not be read: NVMLError_NotSupported: Not Supported") in health.unavailable
    assert health.unavailable_count == 4


def test_a_host_found_only_on_disk_is_included_and_an_unreachable_envelope_wins(fleet):
    fleet.write("stray.example", "health", {"status": "ok", "data": {}})
    fleet.write("stray.example", "membw", {"status": "unreachable", "reason": "ssh: connection refused"})
    run = load_run(str(fleet.run_dir), ["gpu-a01"], {})
    stray = {host.name: host for host in run.hosts}["stray.example"]
    assert not stray.expected and stray.state == "unreachable" and stray.reasons == ["membw: ssh: connection refused"]


def test_unknown_status_and_non_object_are_errors(fleet):
    fleet.write("h1", "health", {"status": "fine", "data": {}})
    fleet.write("h2", "health", "[1, 2]")
    hosts = {host.name: host for host in load_run(str(fleet.run_dir), [], {}).hosts}
    assert hosts["h1"].state == "error" and "unknown status 'fine'" in hosts["h1"].reasons[0]
    assert hosts["h2"].state == "error" and "JSON list, not an object" in hosts["h2"].reasons[0]
