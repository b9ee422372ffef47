"""What ib_write_bw prints, written from perftest 4.5-0.17's source (Debian bookworm's perftest 4.5+0.17-1), not
recorded on a machine with an RDMA device (this one has none): ctx_print_test_info and ctx_print_pingpong_data for the
header and the addresses, RESULT_LINE / RESULT_FMT_G / RESULT_FMT and REPORT_FMT / REPORT_FMT_EXT (perftest_parameters.h)
for the results, pp_init_gpu / create_single_mr / pp_free_gpu (perftest_resources.c) for CUDA memory, and the
fprintf(stderr, ...) lines of write_bw.c, ctx_find_dev, check_link and set_link_layer for the failures. The numbers
are an H200 node's 400G NDR port in the range Azure's health checks publish (360-400 Gb/s with GPUDirect)."""

RESULT_LINE = "-" * 87 + "\n"
RESULT_FMT_G = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
RESULT_FMT = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"


def report_line(size, iterations, peak, average, rate):
    """REPORT_FMT: " %-7lu    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t   %-7.6lf", then REPORT_EXT."""
    return " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f\n" % (size, iterations, peak, average, rate)


def report_line_ext(size, iterations, peak, average, rate):
    """REPORT_FMT_EXT (bw_avg < 0.1 Gb/s): " %-7lu    %" PRIu64 "           %-7.6lf            %-7.6lf            %-7.6lf"."""
    return " %-7d    %d           %-7.6f            %-7.6f            %-7.6f\n" % (size, iterations, peak, average, rate)


def test_info(device, link_type, gid_index=None):
    """ctx_print_test_info of an RDMA_Write BW client (CQ moderation 100, TX depth 128: DEF_CQ_MOD, DEF_TX_BW)."""
    lines = [RESULT_LINE,
             "                    RDMA_Write BW Test\n",
             " Dual-port       : OFF\t\tDevice         : %s\n" % device,
             " Number of qps   : 1\t\tTransport type : IB\n",
             " Connection type : RC\t\tUsing SRQ      : OFF\n",
             " PCIe relax order: ON\n",
             " ibv_wr* API     : ON\n",
             " TX depth        : 128\n",
             " CQ Moderation   : 100\n",
             " Mtu             : 4096[B]\n",
             " Link type       : %s\n" % link_type]
    if gid_index is not None:
        lines.append(" GID index       : %d\n" % gid_index)
    lines += [" Max inline data : 0[B]\n", " rdma_cm QPs\t : OFF\n", " Data ex. method : Ethernet\n", RESULT_LINE]
    return "".join(lines)


def addresses(gids=False):
    """ctx_print_pingpong_data, local then remote: BASIC_ADDR_FMT + RDMA_FMT, and PERF_GID_FMT on RoCE."""
    text = (" local address: LID 0x01 QPN 0x0108 PSN 0x5c9e1f RKey 0x1fff00 VAddr 0x007f2d1c0f0000\n")
    if gids:
        text += " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:01:02:03\n"
    text += " remote address: LID 0x01 QPN 0x0109 PSN 0x1d2a42 RKey 0x200000 VAddr 0x007f5a3c7b0000\n"
    if gids:
        text += " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:01:02:03\n"
    return text


# ib_write_bw -d mlx5_0 -i 1 -p 18515 --report_gbits -D 5 -s 65536 -F 127.0.0.1 (host memory, InfiniBand): in duration
# mode the peak is 0.00 (noPeak).
HOST_CLIENT = (test_info("mlx5_0", "IB") + addresses() + RESULT_LINE + RESULT_FMT_G + "\n"
               + report_line(65536, 3535468, 0.00, 370.71, 0.707069) + RESULT_LINE)

# The same with --use_cuda 3 on a RoCE port with -x 3: CUDA's own lines first (pp_init_gpu, create_single_mr), the GID
# lines, and the deallocation lines after the report.
CUDA_CLIENT = ("initializing CUDA\n"
               "Listing all CUDA devices in system:\n"
               "CUDA device 0: PCIe address is 19:00\n"
               "CUDA device 1: PCIe address is 3B:00\n"
               "CUDA device 2: PCIe address is 4C:00\n"
               "CUDA device 3: PCIe address is 5D:00\n"
               "\nPicking device No. 3\n"
               "[pid = 4242, dev = 3] device name = [NVIDIA H200]\n"
               "creating CUDA Ctx\n"
               "making it the current CUDA Ctx\n"
               "cuMemAlloc() of a 131072 bytes GPU buffer\n"
               "allocated GPU buffer address at 00007f2d1c000000 pointer=0x7f2d1c000000\n"
               + test_info("mlx5_3", "Ethernet", gid_index=3) + addresses(gids=True) + RESULT_LINE + RESULT_FMT_G + "\n"
               + report_line(65536, 3403114, 0.00, 356.84, 0.680618) + RESULT_LINE
               + "deallocating RX GPU buffer 00007f2d1c000000\n"
               "destroying current CUDA Ctx\n")

# The same run without --report_gbits: MiB/s (format_factor 0x100000). 44192.08 MiB/s = 370.71 Gb/s.
HOST_CLIENT_MIB = (test_info("mlx5_0", "IB") + addresses() + RESULT_LINE + RESULT_FMT + "\n"
                   + report_line(65536, 3535468, 0.00, 44192.08, 0.707069) + RESULT_LINE)

# A port that trains badly: below 0.1 Gb/s perftest prints six decimals (REPORT_FMT_EXT).
SLOW_CLIENT = (test_info("mlx5_1", "IB") + addresses() + RESULT_LINE + RESULT_FMT_G + "\n"
               + report_line_ext(65536, 950, 0.0, 0.099612, 0.000190) + RESULT_LINE)

# The server on a port that went Down after the probe read sysfs: check_link fails before the server listens.
DOWN_PORT_SERVER_STDERR = " Port number 1 state is Down\n Couldn't set the link layer\n Couldn't get context for the device\n"
DOWN_PORT_SERVER_STDOUT = ""

# A device name that is not there, on a host with other RDMA devices (ctx_find_dev).
NO_SUCH_DEVICE_STDERR = "IB device mlx5_9 not found\n Unable to find the Infiniband/RoCE device\n"

# A client whose CUDA context cannot be made: ctx_init runs before the test information is printed; cuInit's failure
# is printed on stdout, then exit(1); stderr stays empty.
CUDA_INIT_FAILED_STDOUT = "initializing CUDA\ncuInit(0) returned 100\n"
