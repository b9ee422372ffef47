"""ib_write_bw's output read as perftest prints it (tests/unit/probes/perftest_outputs.py, written from its source):
the bandwidth line under the results header, in Gb/s, and the words of a failed run without addresses."""
import perftest_outputs as outputs
import pytest

from probe_packages.fabric.perftest_report import error_words, parse_bandwidth


def test_host_memory_run_in_gbits():
    assert parse_bandwidth(outputs.HOST_CLIENT) == {"message_bytes": 65536, "iterations": 3535468, "peak_gbps": 0.0,
                                                    "average_gbps": 370.71, "message_rate_mpps": 0.707069}


def test_cuda_memory_run_after_cudas_own_lines():
    assert parse_bandwidth(outputs.CUDA_CLIENT) == {"message_bytes": 65536, "iterations": 3403114, "peak_gbps": 0.0,
                                                    "average_gbps": 356.84, "message_rate_mpps": 0.680618}


def test_mib_per_second_becomes_gbits():
    """perftest's MB is MiB (format_factor 0x100000); its Gb is 10^9 bit (125000000 bytes)."""
    assert parse_bandwidth(outputs.HOST_CLIENT_MIB)["average_gbps"] == pytest.approx(370.71, abs=0.01)


def test_six_decimals_below_a_tenth_of_a_gbit():
    assert parse_bandwidth(outputs.SLOW_CLIENT)["average_gbps"] == pytest.approx(0.099612)


@pytest.mark.parametrize("stdout", ["", outputs.CUDA_INIT_FAILED_STDOUT,
                                    outputs.RESULT_LINE + outputs.RESULT_FMT_G + "\n" + outputs.RESULT_LINE,
                                    outputs.test_info("mlx5_0", "IB") + outputs.addresses()])
def test_no_result_line_is_no_measurement(stdout):
    assert parse_bandwidth(stdout) is None


def test_a_line_of_numbers_outside_the_results_is_not_a_measurement():
    assert parse_bandwidth(outputs.report_line(65536, 10, 1.0, 2.0, 0.1) + outputs.RESULT_FMT_G + "\n") is None


def test_failure_words_are_the_tools_own():
    assert error_words(outputs.DOWN_PORT_SERVER_STDERR, outputs.DOWN_PORT_SERVER_STDOUT) == (
        "Port number 1 state is Down; Couldn't set the link layer; Couldn't get context for the device")
    assert error_words(outputs.NO_SUCH_DEVICE_STDERR) == "IB device mlx5_9 not found; Unable to find the Infiniband/RoCE device"


def test_failure_printed_on_stdout_only():
    assert error_words("", outputs.CUDA_INIT_FAILED_STDOUT) == "initializing CUDA; cuInit(0) returned 100"


def test_failure_words_never_carry_addresses_or_gids():
    words = error_words("", outputs.CUDA_CLIENT)
    assert "GID" not in words and "address" not in words and "QPN" not in words and "255:255" not in words
    assert words.endswith("destroying current CUDA Ctx")


def test_failure_words_are_bounded():
    words = error_words("x" * 1000 + "\n" + "y\n" * 50)
    assert len(words) <= 400 and words.endswith("...")
    assert error_words("", "") == "it printed nothing"
