"""fleet.json read a host at a time (history/fleet_stream.py): the very file a report writes, the same document in any
whitespace and cut into buffers of any size, files cut short or not fleet.json refused with a ValueError, and the run
index never holding a whole fleet.json while it indexes a run."""
import io
import json
import os
import tracemalloc

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.fleet_stream import fleet_members
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.index import rebuild_index
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import FLEET_JSON_FILE

RUN_ID = "20261201T010000Z-stream"


@pytest.fixture(name="fleet_bytes", scope="module")
def fleet_bytes_fixture(tmp_path_factory, report_run):
    results = tmp_path_factory.mktemp("stream") / "results"
    report_run(str(results), RUN_ID, hosts=6, seed=3)
    return (results / RUN_ID / FLEET_JSON_FILE).read_bytes()


def streamed(payload, chunk_bytes=1 << 20):
    """The document fleet_members reads: its members, "hosts" rebuilt from the host entries it handed on."""
    document, hosts = {}, {}
    for kind, name, value in fleet_members(io.BytesIO(payload), "fleet.json", chunk_bytes):
        if kind == "host":
            hosts[name] = value
        else:
            document[name] = value
    document["hosts"] = hosts
    return document


def test_the_fleet_json_a_report_writes_is_read_host_by_host(fleet_bytes):
    expected = json.loads(fleet_bytes)
    assert len(expected["hosts"]) == 6
    events = list(fleet_members(io.BytesIO(fleet_bytes), "fleet.json"))
    assert [name for kind, name, unused in events if kind == "host"] == list(expected["hosts"])
    for chunk_bytes in (1, 7, 4096, 1 << 20):
        assert streamed(fleet_bytes, chunk_bytes) == expected


def test_any_whitespace_and_a_number_cut_by_the_buffer(fleet_bytes):
    document = json.loads(fleet_bytes)
    odd = json.dumps(document, indent="\t \r\n", separators=(" ,\n", " :\t")).encode("utf-8")
    assert streamed(b" \n\t" + odd + b"\r\n \n", 5) == document
    small = b'{"hosts" : {"h": [1.5e+3, -0.25]} , "n":123456789,"t":false, "u": "\xc3\xa9\xe2\x82\xac\\ud83d\\ude00"}'
    for chunk_bytes in range(1, len(small) + 1):
        assert streamed(small, chunk_bytes) == {"hosts": {"h": [1500.0, -0.25]}, "n": 123456789, "t": False, "u": "\u00e9\u20ac\U0001f600"}


class CountedReads(io.BytesIO):
    def __init__(self, payload):
        super().__init__(payload)
        self.bytes_read = 0

    def read(self, size=-1):
        data = super().read(size)
        self.bytes_read += len(data)
        return data


def test_garbage_is_refused_where_it_is_without_reading_on():
    handle = CountedReads(b'{"hosts": {"a": {"x": tru}, "b": ' + b'[' + b'1, ' * 2 ** 22 + b'1]}}')
    with pytest.raises(ValueError, match="Expecting value at character 22"):
        list(fleet_members(handle, "fleet.json", 4096))
    assert handle.bytes_read == 4096


@pytest.mark.parametrize("payload, says", [
    (b"", "the end of the file"),
    (b"   \n", "the end of the file"),
    (b"not json", '"{" expected'),
    (b"[]", '"{" expected'),
    (b'{"hosts": []}', '"hosts" is not an object'),
    (b'{"run_id": "x"}', 'no "hosts"'),
    (b'{"hosts": {}} {}', "more after the document"),
    (b'{"hosts": {"a": {}, "a": {}}}', 'the key "a" appears twice'),
    (b'{"hosts": {}, "hosts": {}}', 'the key "hosts" appears twice'),
    (b'{"hosts": {"a": {"x": 1, "x": 2}}}', 'the key "x" appears twice'),
    (b'{"hosts": {"a": {"x": NaN}}}', "NaN"),
    (b'{"hosts": {"a": 1 "b": 2}}', '"," or "}" expected'),
    (b'{"hosts": {"a": "\xff"}}', "not UTF-8"),
    (b'{"hosts": {' + b"[" * 100000 + b"]" * 100000 + b"}}", "a member's name expected"),
    (b'{"hosts": {"a": ' + b"[" * 100000 + b"]" * 100000 + b"}}", "nested deeper"),
])
def test_what_is_not_fleet_json_is_refused(payload, says):
    for chunk_bytes in (3, 1 << 20):
        with pytest.raises(ValueError, match="fleet.json is not a judged run's fleet.json: .*%s" % says.replace("(", r"\(")):
            streamed(payload, chunk_bytes)


def test_a_file_cut_short_anywhere_is_refused(fleet_bytes):
    step = max(1, len(fleet_bytes) // 97)
    for end in list(range(0, len(fleet_bytes) - 1, step)) + [len(fleet_bytes) - 2, len(fleet_bytes) - 3]:
        with pytest.raises(ValueError, match="fleet.json is not a judged run's fleet.json"):
            streamed(fleet_bytes[:end], 4096)


def test_garbage_in_place_of_a_host_is_refused_and_the_run_left_out(tmp_path, report_run):
    results = tmp_path / "results"
    report_run(str(results), RUN_ID, hosts=3, seed=2)
    path = results / RUN_ID / FLEET_JSON_FILE
    path.write_bytes(path.read_bytes()[:-200] + b"garbage}}\n")
    update = rebuild_index(str(results))
    assert update.indexed == [] and len(update.problems) == 1
    assert update.problems[0].startswith("run %s was not indexed: %s is not a judged run's fleet.json" % (RUN_ID, path))


def test_the_index_never_holds_a_whole_fleet_json(tmp_path, report_run):
    """Python's memory at its peak while a 40-host run of 3 MB is indexed stays under the size of its fleet.json (reading it
    whole held its text and some ten times that as objects)."""
    results = tmp_path / "results"
    report_run(str(results), RUN_ID, hosts=40, seed=4)
    size = os.path.getsize(results / RUN_ID / FLEET_JSON_FILE)
    assert size > 2 * 2 ** 20
    tracemalloc.start()
    try:
        update = rebuild_index(str(results))
        unused_now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert update.indexed == [RUN_ID] and update.problems == []
    assert peak < size, (peak, size)
