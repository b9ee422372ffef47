"""Parts of the hostbw probe: plan, buffer sizing, NUMA locality, PCIe link, statistics, the copies themselves."""
